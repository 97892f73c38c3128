#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stickler {

// Long-lived threads for requests that run beside the transport (tool calls). Reusing threads
// matters beyond thread creation: LibTorch's per-thread state (OpenMP's team among it) costs
// tens of milliseconds on a thread's first model run. Grows up to `max_threads` when every
// thread is busy (a tool waiting on the client holds one); tasks queue beyond that.
class TaskPool {
 public:
  explicit TaskPool(size_t max_threads = 64) : max_threads_(max_threads) {}
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void submit(std::function<void()> task);
  // Runs what is queued, then stops the threads.
  void drain();

 private:
  void work();

  size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t waiting_ = 0;
  size_t running_ = 0;
  bool stopping_ = false;
};

}  // namespace stickler
