// The operation table as MCP tools.
#include "server/mcp/mcp_catalog.h"
#include "simulator/support/errors.h"
#include "tools/framework/input_validation.h"
#include "tools/framework/operation_table.h"

namespace stickler {

using nlohmann::json;

json toolResult(const json& structured) {
  return {{"content", json::array({{{"type", "text"}, {"text", structured.dump()}}})},
          {"structuredContent", structured},
          {"isError", false}};
}

json toolError(const std::string& message) {
  return {{"content", json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

namespace {

McpTool toolFor(const Operation& operation) {
  McpTool tool;
  tool.definition = {{"name", operation.name},
                     {"title", operation.title},
                     {"description", operation.description},
                     {"inputSchema", operation.input_schema},
                     {"outputSchema", operation.output_schema},
                     {"annotations",
                      {{"title", operation.title},
                       {"readOnlyHint", operation.annotations.read_only},
                       {"destructiveHint", operation.annotations.destructive},
                       {"idempotentHint", operation.annotations.idempotent},
                       {"openWorldHint", false}}}};
  tool.call = [&operation](const json& arguments, ToolCallContext& context) {
    try {
      // Bad arguments are a result the agent can act on, not a protocol error.
      return toolResult(runOperation(operation, arguments, context));
    } catch (const UserError& e) {
      return toolError(e.what());
    }
  };
  return tool;
}

}  // namespace

void addOperationTools(McpCatalog& catalog) {
  for (const Operation& operation : operationTable()) {
    if (operation.over_mcp) catalog.tools.push_back(toolFor(operation));
  }
}

}  // namespace stickler
