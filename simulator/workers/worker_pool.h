// Workers that stay up between jobs, by key: model hosts, one per model (its recipe), each
// serving every run of that model, so a model is loaded once per host, not once per run.
//
// What hosts hold is bounded: each charges the memory its key costs (its model's weights, and a
// worker's own), and a new host that would go past the budget first ends idle ones, least
// recently used; when all are busy the caller waits for one to be given back. One host alone
// may exceed the budget (the model must run somewhere). So is their number: at most a few hosts
// per model (concurrent runs of one model beyond that wait for one) and a few per core in all,
// since runs beyond the cores only share them. A host that crashed, timed out or was cancelled
// is not given back: the next run of its model gets a fresh one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "simulator/workers/worker_process.h"

namespace stickler {

// What a worker costs before any model: LibTorch loaded and initialized.
inline constexpr uint64_t kWorkerBaseBytes = uint64_t{200} << 20;

class WorkerPool {
 public:
  struct Bounds {
    size_t max_workers = 8;     // idle and busy
    size_t max_per_key = 2;     // busy workers of one key
    size_t max_idle = 8;        // idle workers kept, whatever they charge
    double idle_seconds = 600;  // an idle worker is ended after this
  };
  explicit WorkerPool(uint64_t budget_bytes) : WorkerPool(budget_bytes, Bounds{}) {}
  WorkerPool(uint64_t budget_bytes, Bounds bounds);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();  // gives the worker back (or drops it when it is gone)
    WorkerProcess& worker() { return *worker_; }
    // Started for this lease, or given over from another key: either way the caller gives it
    // what it needs (a model host: its model) first.
    bool fresh() const { return fresh_; }
    // Ends the worker now: what it holds is not what its key says (a model host made for a
    // guess that proved wrong), so it is not given back.
    void end() { worker_.reset(); }

   private:
    friend class WorkerPool;
    Lease(WorkerPool* pool, std::unique_ptr<WorkerProcess> worker, std::string key,
          std::string family, uint64_t charge, bool fresh);
    WorkerPool* pool_;
    std::unique_ptr<WorkerProcess> worker_;
    std::string key_;
    std::string family_;
    uint64_t charge_;
    bool fresh_;
  };

  // A worker for `key`: an idle one when there is one, else an idle one of the same `family`
  // (taken over: a model host of one archive serves that archive's other graphs and adapted
  // forms, making each from the module it holds), else a fresh one. Throws Cancelled when
  // `cancelled` becomes true while it waits for room, std::runtime_error when no process can be
  // started. The caller holds one lease at a time.
  Lease acquire(const std::string& key, uint64_t charge, const std::string& label,
                const std::atomic<bool>* cancelled = nullptr, const std::string& family = {});

  struct Stats {
    size_t started = 0;
    size_t reused = 0;
    size_t repurposed = 0;  // taken over from another key (of the family, or any)
    size_t ended_idle = 0;  // ended to make room, for being idle too long, or too many
    size_t idle = 0;
    size_t busy = 0;
    uint64_t charged = 0;  // by idle and busy workers
  };
  Stats stats() const;
  uint64_t budget() const { return budget_; }
  // Ends every idle worker.
  void endIdle();
  // From now on a key without an idle worker of its own takes over the least recently used idle
  // worker of another key before starting one: a process that probes one model after another
  // (a sweep's) pays a worker's start-up once, not per model.
  void repurposeIdle(bool on);

  // The process's model hosts. Their budget is STICKLER_HOST_MEMORY (bytes, or with a K, M or
  // G suffix) when set, else half of the machine's memory; at most two per core in all.
  static WorkerPool& modelHosts();
  // The process's workers for jobs that keep nothing between them (sandboxed conditions, sweep
  // probes, gate checks), kept warm so that each job does not start a process.
  static WorkerPool& jobWorkers();

 private:
  struct Idle {
    std::unique_ptr<WorkerProcess> worker;
    std::string key;
    std::string family;
    uint64_t charge;
    std::chrono::steady_clock::time_point since;
  };
  void giveBack(std::unique_ptr<WorkerProcess> worker, const std::string& key,
                const std::string& family, uint64_t charge);
  // Under the lock: ends idle workers past their time or beyond max_idle; then, while
  // `workers` more would be too many or (when `wanted` is given) `charged_ + *wanted` is over
  // the budget, the least recently used. Returns what to end outside the lock.
  std::list<Idle> trim(std::optional<uint64_t> wanted, size_t workers);

  const uint64_t budget_;
  const Bounds bounds_;
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::list<Idle> idle_;  // most recently used first
  size_t busy_ = 0;
  std::map<std::string, size_t> busy_by_key_;
  bool repurpose_idle_ = false;
  uint64_t charged_ = 0;
  Stats counts_;
};

// "8G", "512M", "1048576": bytes; nullopt when `text` is none of these.
std::optional<uint64_t> parseByteSize(const std::string& text);

}  // namespace stickler
