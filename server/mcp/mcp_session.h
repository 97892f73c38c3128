#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_stack.h"
#include "server/mcp/json_rpc.h"
#include "simulator/graph/model_cache.h"

namespace stickler {

// Where messages to the client go while one request is handled: progress and log
// notifications, and requests to the client (sampling, elicitation). stdio: stdout. HTTP: the
// SSE stream answering that POST.
class ClientChannel {
 public:
  virtual ~ClientChannel() = default;
  virtual void send(const nlohmann::json& message) = 0;
  // Ends the stream carrying this request's messages before its response (HTTP: the client
  // resumes it with GET and Last-Event-ID); later messages are kept for the resumed stream.
  virtual void closeStream() {}
  // Whether a request sent here can be answered (not over a plain JSON HTTP response).
  virtual bool carriesRequests() const { return true; }
};

// RFC 5424 severities, as MCP's logging names them; -1 for an unknown name.
int logLevelRank(const std::string& level);

// One MCP session: the negotiated protocol, the client's capabilities, the log level, the
// models it loaded, its subscriptions, the requests in flight (to cancel them), and the
// requests the server sent to the client (to match their responses).
class McpSession {
 public:
  explicit McpSession(std::string id) : id_(std::move(id)) { touch(); }
  const std::string& id() const { return id_; }

  // Activity, so that a server can let abandoned sessions go.
  void touch();
  std::chrono::steady_clock::time_point lastActive() const;
  bool busy() const;  // a request of this session is being handled

  std::string protocol_version;
  std::atomic<bool> initialize_received{false};
  nlohmann::json client_capabilities = nlohmann::json::object();
  nlohmann::json client_info = nlohmann::json::object();
  std::atomic<int> log_rank{logLevelRank("info")};
  ModelCache models;
  AdapterStacks adapter_stacks;  // adapters applied to its models, kept across calls

  // A subscription remembers the state of its resource when last notified (`tag`: for a
  // review, its revision), so that a change is notified once. A session holds at most
  // `max_subscriptions`: false when `uri` is new and would exceed them (nothing changes).
  bool subscribe(const std::string& uri, const std::string& tag = "",
                 size_t max_subscriptions = kMaxSubscriptions);
  static constexpr size_t kMaxSubscriptions = 256;
  void unsubscribe(const std::string& uri);
  bool subscribed(const std::string& uri) const;
  std::map<std::string, std::string> subscriptions() const;  // uri -> tag
  // Sets the tag of a subscribed resource; true when the tag changed (notify the client).
  bool retag(const std::string& uri, const std::string& tag);

  // Where notifications that answer no request go (resources/updated): stdout over stdio, the
  // session's standalone stream over HTTP; none until the transport sets it.
  void setNotifier(std::function<void(const nlohmann::json&)> notifier);
  bool notify(const nlohmann::json& notification);  // false when there is nowhere to send it

  // A request being handled: its cancellation flag, set by notifications/cancelled.
  std::shared_ptr<std::atomic<bool>> beginRequest(const nlohmann::json& id);
  void endRequest(const nlohmann::json& id);
  bool cancelRequest(const nlohmann::json& id);
  void cancelAll();  // the client went away

  // Sends a request to the client on `channel` and waits for its response (the result, or an
  // RpcFailure for an error response); gives up when `cancelled` is set or after the timeout.
  nlohmann::json requestClient(ClientChannel& channel, const std::string& method,
                               nlohmann::json params, const std::atomic<bool>* cancelled,
                               double timeout_seconds);
  // A response from the client: true when it answered one of our requests.
  bool deliverResponse(const RpcMessage& response);

 private:
  struct Pending {
    bool done = false;
    RpcMessage response;
  };
  std::string id_;
  mutable std::mutex mutex_;
  std::condition_variable responded_;
  std::map<std::string, std::string> subscriptions_;
  std::function<void(const nlohmann::json&)> notifier_;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> in_flight_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;
  int64_t next_request_id_ = 1;
  std::atomic<std::chrono::steady_clock::rep> last_active_{0};
};

}  // namespace stickler
