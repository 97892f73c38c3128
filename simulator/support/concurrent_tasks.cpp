#include "simulator/support/concurrent_tasks.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace stickler {

size_t concurrencyLimit() {
  if (const char* text = std::getenv("STICKLER_THREADS"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && value >= 1) return static_cast<size_t>(value);
  }
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

void runConcurrently(const std::vector<std::function<void()>>& tasks, size_t workers) {
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      try {
        tasks[i]();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t helpers =
      std::min(std::max<size_t>(workers, 1), tasks.size()) - (tasks.empty() ? 0 : 1);
  std::vector<std::thread> threads;
  threads.reserve(helpers);
  for (size_t i = 0; i < helpers; ++i) threads.emplace_back(work);
  work();
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace stickler
