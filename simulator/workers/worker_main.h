// The worker's side: a binary started with `__worker <label>` serves the jobs that arrive on
// its channel, one at a time, until the caller closes it (worker_process.h).
#pragma once

#include <optional>
#include <string>

namespace stickler {

// When `argv` puts the binary in worker mode, serves jobs until the channel closes and returns
// the exit status; nullopt otherwise. Every binary that starts workers (stickler, the test and
// benchmark binaries) calls it first thing in main(), after registering its job kinds.
std::optional<int> runWorkerIfAsked(int argc, char** argv);

// Whether this process is a worker.
bool inWorkerProcess();

// In a worker, says what the current job is doing now (its caller names it when the job dies or
// runs out of time there); elsewhere nothing.
void setWorkerPhase(const std::string& phase);

}  // namespace stickler
