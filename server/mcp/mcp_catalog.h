#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/mcp/tool_call_context.h"
#include "server/mcp/workspace.h"

namespace stickler {

// What the server offers a client: tools, resources, resource templates and prompts, each with
// its MCP definition and what answers for it.
struct McpTool {
  nlohmann::json definition;  // name, title, description, inputSchema, outputSchema, annotations
  // Returns a CallToolResult (content, structuredContent, isError).
  std::function<nlohmann::json(const nlohmann::json& arguments, ToolCallContext& context)> call;
};

struct McpResource {
  nlohmann::json definition;                 // uri, name, title, description, mimeType
  std::function<nlohmann::json()> contents;  // the `contents` array of resources/read
};

struct McpResourceTemplate {
  nlohmann::json definition;  // uriTemplate, name, title, description, mimeType
  // The contents for a URI the template matches, or nullopt when it does not match.
  std::function<std::optional<nlohmann::json>(const std::string& uri)> read;
  // Completions for one of the template's variables.
  std::function<std::vector<std::string>(const std::string& argument, const std::string& prefix)>
      complete;
};

struct McpPrompt {
  nlohmann::json definition;  // name, title, description, arguments
  // The `messages` for these arguments; throws RpcFailure(kInvalidParams) for bad ones.
  std::function<nlohmann::json(const nlohmann::json& arguments)> get;
  std::function<std::vector<std::string>(const std::string& argument, const std::string& prefix)>
      complete;
};

struct McpCatalog {
  std::vector<McpTool> tools;
  std::vector<McpResource> resources;
  std::vector<McpResourceTemplate> templates;
  std::vector<McpPrompt> prompts;
};

// A tool result: the structured output, and the same as JSON text for clients that read text.
nlohmann::json toolResult(const nlohmann::json& structured);
nlohmann::json toolError(const std::string& message);

// Stickler's own catalog: every entry of the operation table as a tool (arguments validated
// against its input schema first), stickler:// resources (device profiles, documentation) and
// prompts.
McpCatalog sticklerCatalog(const Workspace& workspace);

// The fixtures the MCP conformance suite calls by fixed names (--conformance-fixtures only).
void addConformanceFixtures(McpCatalog& catalog);

}  // namespace stickler
