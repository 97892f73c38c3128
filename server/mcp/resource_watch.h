// Notifications for subscribed resources that change outside any request: a reviewer deciding
// on the command line (another process) or on the review page. A thread looks at the
// subscriptions now and then and sends notifications/resources/updated for each whose tag moved.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/mcp/mcp_session.h"

namespace stickler {

class ResourceWatch {
 public:
  using Sessions = std::function<std::vector<std::shared_ptr<McpSession>>()>;
  // `tag_of` returns the current tag of a URI it watches (see McpSession::subscribe), and
  // `watched` says which URIs those are.
  ResourceWatch(Sessions sessions, std::function<bool(const std::string&)> watched,
                std::function<std::string(const std::string&)> tag_of, double interval_seconds);
  ~ResourceWatch();
  ResourceWatch(const ResourceWatch&) = delete;
  ResourceWatch& operator=(const ResourceWatch&) = delete;

  // One look at every subscription (the thread calls it; tests may too).
  void poll();

 private:
  Sessions sessions_;
  std::function<bool(const std::string&)> watched_;
  std::function<std::string(const std::string&)> tag_of_;
  double interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace stickler
