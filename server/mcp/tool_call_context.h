#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/mcp/mcp_session.h"
#include "server/mcp/workspace.h"
#include "tools/framework/operation.h"

namespace stickler {

// An OperationContext for one tools/call: paths confined to the workspace, progress and logs
// sent to the client, the session's models, cancellation by notifications/cancelled, and
// requests to the client for the tools that need them.
class ToolCallContext : public OperationContext {
 public:
  static constexpr size_t kListLimit = 100;

  ToolCallContext(McpSession& session, ClientChannel& channel, const Workspace& workspace,
                  nlohmann::json progress_token, std::shared_ptr<std::atomic<bool>> cancelled);

  TaskControl task() override;
  void log(const std::string& level, const std::string& message) override;
  std::string resolvePath(const std::string& path) override;
  std::string resolveOutputPath(const std::string& path) override;
  ModelCache* models() override { return &session_.models; }
  AdapterStacks* adapterStacks() override { return &session_.adapter_stacks; }
  std::string workspaceRoot() override { return workspace_.roots().at(0); }
  size_t listLimit() override { return kListLimit; }

  // notifications/progress, when the client sent a progress token; never going backwards.
  void progress(double done, double total, const std::string& message);
  bool cancelled() const { return cancelled_->load(); }
  bool clientSupports(const std::string& capability) const;
  nlohmann::json requestClient(const std::string& method, nlohmann::json params);
  void closeStream() { channel_.closeStream(); }

 private:
  McpSession& session_;
  ClientChannel& channel_;
  const Workspace& workspace_;
  nlohmann::json progress_token_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  double last_progress_ = -1;
};

}  // namespace stickler
