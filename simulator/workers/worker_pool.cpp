#include "simulator/workers/worker_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "simulator/support/task_control.h"

namespace stickler {

std::optional<uint64_t> parseByteSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  size_t end = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = text.substr(end);
  int shift = 0;
  if (suffix == "K" || suffix == "k") {
    shift = 10;
  } else if (suffix == "M" || suffix == "m") {
    shift = 20;
  } else if (suffix == "G" || suffix == "g") {
    shift = 30;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (shift > 0 && value > (~uint64_t{0} >> shift)) return std::nullopt;
  return value << shift;
}

WorkerPool::WorkerPool(uint64_t budget_bytes, Bounds bounds)
    : budget_(budget_bytes), bounds_(bounds) {}

WorkerPool::~WorkerPool() {
  endIdle();
}

WorkerPool::Lease::Lease(WorkerPool* pool, std::unique_ptr<WorkerProcess> worker, std::string key,
                         std::string family, uint64_t charge, bool fresh)
    : pool_(pool),
      worker_(std::move(worker)),
      key_(std::move(key)),
      family_(std::move(family)),
      charge_(charge),
      fresh_(fresh) {}

WorkerPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_),
      worker_(std::move(other.worker_)),
      key_(std::move(other.key_)),
      family_(std::move(other.family_)),
      charge_(other.charge_),
      fresh_(other.fresh_) {
  other.pool_ = nullptr;
}

WorkerPool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->giveBack(std::move(worker_), key_, family_, charge_);
}

std::list<WorkerPool::Idle> WorkerPool::trim(std::optional<uint64_t> wanted, size_t workers) {
  std::list<Idle> ended;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = idle_.begin(); it != idle_.end();) {
    const bool stale =
        std::chrono::duration<double>(now - it->since).count() > bounds_.idle_seconds;
    if (stale || !it->worker->checkAlive()) {
      charged_ -= it->charge;
      ++counts_.ended_idle;
      ended.splice(ended.end(), idle_, it++);
    } else {
      ++it;
    }
  }
  while (!idle_.empty() &&
         (idle_.size() > bounds_.max_idle || (wanted && charged_ + *wanted > budget_) ||
          busy_ + idle_.size() + workers > bounds_.max_workers)) {
    charged_ -= idle_.back().charge;
    ++counts_.ended_idle;
    ended.splice(ended.end(), idle_, std::prev(idle_.end()));
  }
  return ended;
}

WorkerPool::Lease WorkerPool::acquire(const std::string& key, uint64_t charge,
                                      const std::string& label, const std::atomic<bool>* cancelled,
                                      const std::string& family) {
  const uint64_t cost = charge + kWorkerBaseBytes;
  std::list<Idle> ended;  // ended outside the lock: killing and reaping take a moment
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (it->key != key || !it->worker->checkAlive()) continue;
        std::unique_ptr<WorkerProcess> worker = std::move(it->worker);
        const uint64_t kept = it->charge;
        idle_.erase(it);
        ++busy_;
        ++busy_by_key_[key];
        ++counts_.reused;
        lock.unlock();
        ended.clear();
        return Lease(this, std::move(worker), key, family, kept, /*fresh=*/false);
      }
      if ((repurpose_idle_ || !family.empty()) && busy_by_key_[key] < bounds_.max_per_key) {
        for (auto it = idle_.rbegin(); it != idle_.rend(); ++it) {
          if (!repurpose_idle_ && it->family != family) continue;
          if (!it->worker->checkAlive()) continue;
          std::unique_ptr<WorkerProcess> worker = std::move(it->worker);
          charged_ -= it->charge;
          idle_.erase(std::next(it).base());
          charged_ += cost;
          ++busy_;
          ++busy_by_key_[key];
          ++counts_.repurposed;
          lock.unlock();
          ended.clear();
          return Lease(this, std::move(worker), key, family, cost, /*fresh=*/true);
        }
      }
      ended.splice(ended.end(), trim(cost, 1));
      const bool room = (charged_ + cost <= budget_ || busy_ == 0) &&
                        busy_ + idle_.size() < bounds_.max_workers &&
                        busy_by_key_[key] < bounds_.max_per_key;
      if (room) break;
      // What could make room is busy: wait for a worker to come back.
      returned_.wait_for(lock, std::chrono::milliseconds(50));
      if (cancelled != nullptr && cancelled->load()) {
        lock.unlock();
        ended.clear();
        throw Cancelled();
      }
    }
    charged_ += cost;
    ++busy_;
    ++busy_by_key_[key];
    ++counts_.started;
  }
  ended.clear();
  try {
    return Lease(this, std::make_unique<WorkerProcess>(label), key, family, cost, /*fresh=*/true);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    charged_ -= cost;
    --busy_;
    --busy_by_key_[key];
    returned_.notify_all();
    throw;
  }
}

void WorkerPool::giveBack(std::unique_ptr<WorkerProcess> worker, const std::string& key,
                          const std::string& family, uint64_t charge) {
  std::list<Idle> ended;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --busy_;
    if (--busy_by_key_[key] == 0) busy_by_key_.erase(key);
    if (worker && worker->alive()) {
      idle_.push_front({std::move(worker), key, family, charge, std::chrono::steady_clock::now()});
    } else {
      charged_ -= charge;
    }
    // Not for the budget: the worker given back was charged while busy, so keeping it idle
    // takes no memory that is not taken already, and a worker that needs room ends it then. A
    // model host larger than the budget on its own (an 8B model's, with half the machine's
    // memory as the budget) runs alone, and ending it here would make every device run of a
    // localization load its model again.
    ended = trim(std::nullopt, 0);
  }
  returned_.notify_all();
}

void WorkerPool::repurposeIdle(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  repurpose_idle_ = on;
}

WorkerPool::Stats WorkerPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats stats = counts_;
  stats.idle = idle_.size();
  stats.busy = busy_;
  stats.charged = charged_;
  return stats;
}

void WorkerPool::endIdle() {
  std::list<Idle> ended;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Idle& entry : idle_) charged_ -= entry.charge;
    counts_.ended_idle += idle_.size();
    ended.swap(idle_);
  }
  returned_.notify_all();
}

WorkerPool& WorkerPool::modelHosts() {
  static WorkerPool* hosts = [] {
    uint64_t budget = 0;
    if (const char* text = std::getenv("STICKLER_HOST_MEMORY")) {
      if (auto bytes = parseByteSize(text)) budget = *bytes;
    }
    if (budget == 0) {
      const long pages = ::sysconf(_SC_PHYS_PAGES);
      const long page = ::sysconf(_SC_PAGESIZE);
      budget = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page / 2 : uint64_t{8} << 30;
    }
    Bounds bounds;
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    bounds.max_workers = std::max<size_t>(4, 2 * static_cast<size_t>(cores > 0 ? cores : 1));
    // Never destroyed: hosts are ended by the channel closing when this process exits, and a
    // static destructor must not wait on threads that may still hold leases.
    return new WorkerPool(budget, bounds);
  }();
  return *hosts;
}

}  // namespace stickler

namespace stickler {

WorkerPool& WorkerPool::jobWorkers() {
  static WorkerPool* workers = [] {
    Bounds bounds;
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    bounds.max_workers = std::max<size_t>(4, 2 * static_cast<size_t>(cores > 0 ? cores : 1));
    bounds.max_per_key = bounds.max_workers;
    bounds.max_idle = 4;
    bounds.idle_seconds = 60;
    return new WorkerPool(~uint64_t{0}, bounds);  // never destroyed, as modelHosts()
  }();
  return *workers;
}

}  // namespace stickler
