#include "server/mcp/task_pool.h"

#include "simulator/support/freed_memory.h"

namespace stickler {

TaskPool::~TaskPool() {
  drain();
}

void TaskPool::submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  if (waiting_ == 0 && threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
  ready_.notify_one();
}

void TaskPool::drain() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return tasks_.empty() && running_ == 0; });
    stopping_ = true;
    ready_.notify_all();
  }
  for (auto& thread : threads_) thread.join();
  threads_.clear();
}

void TaskPool::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++waiting_;
    ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    --waiting_;
    if (tasks_.empty()) return;  // stopping
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    ++running_;
    lock.unlock();
    task();
    lock.lock();
    --running_;
    idle_.notify_all();
    if (running_ == 0 && tasks_.empty()) {
      // No call runs: what the calls freed and kept for reuse goes back (freed_memory.h).
      lock.unlock();
      releaseFreedMemory();
      lock.lock();
    }
  }
}

}  // namespace stickler
