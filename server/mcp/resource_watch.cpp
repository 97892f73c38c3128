#include "server/mcp/resource_watch.h"

#include <chrono>

namespace stickler {

ResourceWatch::ResourceWatch(Sessions sessions, std::function<bool(const std::string&)> watched,
                             std::function<std::string(const std::string&)> tag_of,
                             double interval_seconds)
    : sessions_(std::move(sessions)),
      watched_(std::move(watched)),
      tag_of_(std::move(tag_of)),
      interval_(interval_seconds) {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::duration<double>(interval_));
      if (stopping_) break;
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

ResourceWatch::~ResourceWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ResourceWatch::poll() {
  for (const auto& session : sessions_()) {
    for (const auto& [uri, tag] : session->subscriptions()) {
      if (!watched_(uri)) continue;
      const std::string now = tag_of_(uri);
      if (now == tag || !session->retag(uri, now)) continue;
      session->notify({{"jsonrpc", "2.0"},
                       {"method", "notifications/resources/updated"},
                       {"params", {{"uri", uri}}}});
    }
  }
}

}  // namespace stickler
