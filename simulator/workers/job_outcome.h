// How a job given to a worker process ended: the one outcome type of device runs, sandboxed
// adapter code, the review gate's checks and sweep probes.
#pragma once

#include <string>

#include "simulator/workers/worker_progress.h"
#include "simulator/workers/worker_wire.h"

namespace stickler {

struct JobOutcome {
  enum class Kind {
    kCompleted,  // the job returned `result`
    kCrashed,    // the worker died (a signal: an abort, a segfault, SIGXCPU; or an exit)
    kTimedOut,   // killed at the job's timeout
    kCancelled,  // killed because the caller cancelled
    kFailed,     // the job threw, or could not be given to a worker: `message` says what
  };
  Kind kind = Kind::kFailed;
  WireMessage result;
  std::string message;      // a sentence for every kind but kCompleted
  int signal = 0;           // kCrashed by a signal
  int exit_status = 0;      // kCrashed by an exit
  std::string stderr_tail;  // the end of what the worker printed during the job
  ProgressSnapshot progress;
  double seconds = 0.0;

  bool completed() const { return kind == Kind::kCompleted; }
};

// "completed", "crashed", "timed_out", "cancelled", "failed".
std::string jobOutcomeName(JobOutcome::Kind kind);

}  // namespace stickler
