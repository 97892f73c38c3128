#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/mcp/mcp_catalog.h"
#include "server/mcp/mcp_session.h"
#include "server/mcp/resource_watch.h"
#include "server/mcp/workspace.h"

namespace stickler {

struct ServerOptions {
  std::vector<std::string> roots{"."};  // the workspace
  bool conformance_fixtures = false;    // the conformance suite's fixture tools, resources, prompts
  // Sessions idle this long (no request in flight) are ended, so that clients that never send
  // DELETE do not keep their models loaded forever.
  double session_idle_seconds = 3600;
  // At most this many sessions; a new one ends the least recently active idle session.
  size_t max_sessions = 64;
  // How often subscriptions to resources that change outside requests (reviews) are looked at.
  double watch_seconds = 0.5;
};

// The MCP protocol over any transport: lifecycle, tools, resources, prompts, completion,
// logging, progress, cancellation, requests to the client. Transports own the sessions' I/O;
// handle() is safe to call from several threads at once (one per request).
class McpServer {
 public:
  explicit McpServer(const ServerOptions& options);

  static const std::vector<std::string>& supportedProtocolVersions();  // newest first

  // A session with an id from a cryptographic source; nullptr when max_sessions are all busy.
  std::shared_ptr<McpSession> createSession();
  // A live session by id (and marks it active); nullptr when unknown, closed or expired.
  std::shared_ptr<McpSession> findSession(const std::string& id);
  bool closeSession(const std::string& id);
  size_t sessionCount() const;
  std::vector<std::shared_ptr<McpSession>> liveSessions() const;

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
  void subscribe(McpSession& session, const std::string& uri) const;
  nlohmann::json getPrompt(const nlohmann::json& params) const;
  nlohmann::json complete(const nlohmann::json& params) const;
  void endExpiredSessions();  // with sessions_mutex_ held

  ServerOptions options_;
  Workspace workspace_;
  McpCatalog catalog_;
  mutable std::mutex sessions_mutex_;
  std::map<std::string, std::shared_ptr<McpSession>> sessions_;
  std::unique_ptr<ResourceWatch> watch_;  // last: stopped before the rest goes
};

}  // namespace stickler
