#include "server/mcp/mcp_session.h"

#include <chrono>

namespace stickler {

using nlohmann::json;

int logLevelRank(const std::string& level) {
  static const char* const kLevels[] = {"debug", "info",     "notice", "warning",
                                        "error", "critical", "alert",  "emergency"};
  for (int i = 0; i < 8; ++i) {
    if (level == kLevels[i]) return i;
  }
  return -1;
}

void McpSession::touch() {
  last_active_.store(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::chrono::steady_clock::time_point McpSession::lastActive() const {
  return std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(last_active_.load()));
}

bool McpSession::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !in_flight_.empty();
}

bool McpSession::subscribe(const std::string& uri, const std::string& tag,
                           size_t max_subscriptions) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (subscriptions_.count(uri) == 0 && subscriptions_.size() >= max_subscriptions) return false;
  subscriptions_[uri] = tag;
  return true;
}

void McpSession::unsubscribe(const std::string& uri) {
  std::lock_guard<std::mutex> lock(mutex_);
  subscriptions_.erase(uri);
}

bool McpSession::subscribed(const std::string& uri) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return subscriptions_.count(uri) != 0;
}

std::map<std::string, std::string> McpSession::subscriptions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return subscriptions_;
}

bool McpSession::retag(const std::string& uri, const std::string& tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = subscriptions_.find(uri);
  if (it == subscriptions_.end() || it->second == tag) return false;
  it->second = tag;
  return true;
}

void McpSession::setNotifier(std::function<void(const json&)> notifier) {
  std::lock_guard<std::mutex> lock(mutex_);
  notifier_ = std::move(notifier);
}

bool McpSession::notify(const json& notification) {
  std::function<void(const json&)> notifier;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    notifier = notifier_;
  }
  if (!notifier) return false;
  notifier(notification);
  return true;
}

std::shared_ptr<std::atomic<bool>> McpSession::beginRequest(const json& id) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_[id.dump()] = flag;
  return flag;
}

void McpSession::endRequest(const json& id) {
  touch();  // a long call counts as activity until it ends
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.erase(id.dump());
}

bool McpSession::cancelRequest(const json& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_flight_.find(id.dump());
  if (it == in_flight_.end()) return false;
  it->second->store(true);
  responded_.notify_all();  // a request waiting on the client gives up too
  return true;
}

void McpSession::cancelAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, flag] : in_flight_) flag->store(true);
  responded_.notify_all();
}

json McpSession::requestClient(ClientChannel& channel, const std::string& method, json params,
                               const std::atomic<bool>* cancelled, double timeout_seconds) {
  auto pending = std::make_shared<Pending>();
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_request_id_++;
    pending_[json(id).dump()] = pending;
  }
  channel.send(rpcRequest(id, method, std::move(params)));
  std::unique_lock<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  while (!pending->done && std::chrono::steady_clock::now() < deadline) {
    if (cancelled != nullptr && cancelled->load()) break;
    // Wake up now and then: a cancellation flag set elsewhere does not notify this.
    responded_.wait_for(lock, std::chrono::milliseconds(100));
  }
  pending_.erase(json(id).dump());
  if (!pending->done) {
    throw RpcFailure(rpc_error::kInternalError, "the client did not answer " + method);
  }
  if (!pending->response.error.is_null()) {
    throw RpcFailure(pending->response.error.value("code", rpc_error::kInternalError),
                     "the client refused " + method + ": " +
                         pending->response.error.value("message", std::string("no reason given")));
  }
  return pending->response.result;
}

bool McpSession::deliverResponse(const RpcMessage& response) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(response.id.dump());
  if (it == pending_.end()) return false;
  it->second->response = response;
  it->second->done = true;
  responded_.notify_all();
  return true;
}

}  // namespace stickler
