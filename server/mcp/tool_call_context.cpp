#include "server/mcp/tool_call_context.h"

#include "server/mcp/json_rpc.h"

namespace stickler {

using nlohmann::json;

ToolCallContext::ToolCallContext(McpSession& session, ClientChannel& channel,
                                 const Workspace& workspace, json progress_token,
                                 std::shared_ptr<std::atomic<bool>> cancelled)
    : session_(session),
      channel_(channel),
      workspace_(workspace),
      progress_token_(std::move(progress_token)),
      cancelled_(std::move(cancelled)) {}

TaskControl ToolCallContext::task() {
  TaskControl control;
  control.cancelled = cancelled_.get();
  control.on_progress = [this](double done, double total, const std::string& message) {
    progress(done, total, message);
  };
  return control;
}

void ToolCallContext::progress(double done, double total, const std::string& message) {
  if (progress_token_.is_null() || done <= last_progress_) return;
  last_progress_ = done;
  json params{{"progressToken", progress_token_}, {"progress", done}};
  if (total > 0) params["total"] = total;
  if (!message.empty()) params["message"] = message;
  channel_.send(rpcNotification("notifications/progress", params));
}

void ToolCallContext::log(const std::string& level, const std::string& message) {
  const int rank = logLevelRank(level);
  if (rank < 0 || rank < session_.log_rank.load()) return;
  channel_.send(rpcNotification("notifications/message",
                                {{"level", level}, {"logger", "stickler"}, {"data", message}}));
}

std::string ToolCallContext::resolvePath(const std::string& path) {
  return workspace_.resolve(path);
}

std::string ToolCallContext::resolveOutputPath(const std::string& path) {
  return workspace_.resolveCreating(path);
}

bool ToolCallContext::clientSupports(const std::string& capability) const {
  return session_.client_capabilities.is_object() &&
         session_.client_capabilities.contains(capability);
}

json ToolCallContext::requestClient(const std::string& method, json params) {
  if (!channel_.carriesRequests()) {
    throw RpcFailure(
        rpc_error::kInternalError,
        method + " needs a stream to the client: call the tool with Accept: text/event-stream");
  }
  return session_.requestClient(channel_, method, std::move(params), cancelled_.get(), 300);
}

}  // namespace stickler
