#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/mcp_catalog.h"
#include "server/mcp_session.h"
#include "server/workspace.h"

namespace stickler {

struct ServerOptions {
  std::vector<std::string> roots{"."};  // the workspace
  bool conformance_fixtures = false;    // the conformance suite's fixture tools, resources, prompts
};

// The MCP protocol over any transport: lifecycle, tools, resources, prompts, completion,
// logging, progress, cancellation, requests to the client. Transports own the sessions' I/O;
// handle() is safe to call from several threads at once (one per request).
class McpServer {
 public:
  explicit McpServer(const ServerOptions& options);

  static const std::vector<std::string>& supportedProtocolVersions();  // newest first

  std::shared_ptr<McpSession> createSession();  // with an id from a cryptographic source
  std::shared_ptr<McpSession> findSession(const std::string& id) const;
  bool closeSession(const std::string& id);
  size_t sessionCount() const;

  // Handles one message of `session`. Returns the response to a request; nothing for
  // notifications, responses, and requests the client cancelled. Blocks while a tool runs;
  // `channel` carries what the handling sends on the way (progress, logs, requests).
  std::optional<nlohmann::json> handle(McpSession& session, const nlohmann::json& message,
                                       ClientChannel& channel);
  // Whether handling `message` may send messages before its response (a tools/call).
  static bool mayStream(const nlohmann::json& message);

  const Workspace& workspace() const { return workspace_; }

 private:
  nlohmann::json dispatch(McpSession& session, const RpcMessage& request, ClientChannel& channel);
  nlohmann::json initialize(McpSession& session, const nlohmann::json& params);
  nlohmann::json callTool(McpSession& session, const RpcMessage& request, ClientChannel& channel);
  nlohmann::json readResource(const nlohmann::json& params) const;
  nlohmann::json getPrompt(const nlohmann::json& params) const;
  nlohmann::json complete(const nlohmann::json& params) const;

  Workspace workspace_;
  McpCatalog catalog_;
  mutable std::mutex sessions_mutex_;
  std::map<std::string, std::shared_ptr<McpSession>> sessions_;
};

}  // namespace stickler
