#include "simulator/workers/job_registry.h"

#include <map>
#include <mutex>

namespace stickler {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, JobHandler> handlers;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void registerJob(const std::string& kind, JobHandler handler) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().handlers[kind] = std::move(handler);
}

const JobHandler* findJob(const std::string& kind) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto found = registry().handlers.find(kind);
  return found == registry().handlers.end() ? nullptr : &found->second;
}

std::vector<std::string> registeredJobs() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::string> kinds;
  for (const auto& [kind, handler] : registry().handlers) kinds.push_back(kind);
  return kinds;
}

}  // namespace stickler
