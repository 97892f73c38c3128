// The kinds of job a worker process runs, each a function from a job message to a result
// message. Libraries register their kinds (registerWorkerJobs() in tools/ collects them); a
// worker looks the job's "kind" up here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "simulator/workers/worker_progress.h"
#include "simulator/workers/worker_wire.h"

namespace stickler {

struct JobContext {
  WorkerProgress& progress;
  // Seconds the caller gives the job (it kills the worker after them); 0 when unlimited.
  double seconds = 0.0;
};

// Throws to fail the job (the worker stays up); the message goes to the caller.
using JobHandler = std::function<WireMessage(const WireMessage& job, JobContext& context)>;

void registerJob(const std::string& kind, JobHandler handler);
// nullptr when no such kind is registered.
const JobHandler* findJob(const std::string& kind);
std::vector<std::string> registeredJobs();

}  // namespace stickler
