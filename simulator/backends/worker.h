#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace stickler {

// Where a device run had got to, written by the worker as it goes and read by the caller
// after the worker died. Lives in memory shared between the two processes.
struct WorkerProgress {
  std::atomic<int64_t> node{-1};          // position in allNodes() of the node running
  std::atomic<int64_t> module_call{-1};   // innermost module call of that node (-1: root)
  std::atomic<int64_t> last_entered{-1};  // the last module call entered
  std::atomic<int64_t> nodes_run{0};
};

struct WorkerOutcome {
  enum class Status {
    kCompleted,  // the job returned; `payload` holds what it returned
    kFailed,     // the job threw; `message` holds what
    kAborted,    // the worker died of a signal (SIGABRT from an assertion, or another)
    kTimedOut,   // killed after the timeout
    kCancelled,  // killed because the caller cancelled
  };
  Status status = Status::kFailed;
  std::string payload;
  std::string message;
  std::string stderr_text;  // what the worker printed on stderr (a vendor's assertion, say)
  int signal = 0;
  int64_t node = -1;
  int64_t module_call = -1;
  int64_t last_entered = -1;
  int64_t nodes_run = 0;
  double seconds = 0.0;
};

// What the worker may use, enforced by the kernel (setrlimit) once it has forked: code that
// loops or allocates without end is killed (SIGXCPU) or fails to allocate, not the caller.
struct WorkerLimits {
  double cpu_seconds = 0;            // RLIMIT_CPU; 0 for none
  uint64_t extra_address_bytes = 0;  // RLIMIT_AS beyond what the worker inherits; 0 for none
};

// Runs `job` in a forked worker process, so that an abort or a hang inside it is a result,
// not the end of the caller. The job returns bytes for the caller and may update `progress`.
// The worker inherits the caller's memory (models already loaded), runs with one thread, and
// exits without running the caller's destructors.
// When `cancelled` becomes true the worker is killed.
WorkerOutcome runInWorker(const std::function<std::string(WorkerProgress& progress)>& job,
                          double timeout_seconds, const std::atomic<bool>* cancelled = nullptr,
                          const WorkerLimits& limits = {});

}  // namespace stickler
