// The worker's side: a process made by the fork server, or a binary started with
// `__worker <label>`, serves the jobs that arrive on its channel, one at a time, until the caller
// closes it (worker_process.h).
#pragma once

#include <optional>
#include <string>

namespace stickler {

// When `argv` puts the binary in worker mode, serves jobs until the channel closes and returns
// the exit status; in fork-server mode (fork_server.h), makes workers until its asker is gone;
// nullopt otherwise. Every binary that starts workers (stickler, the test and benchmark binaries)
// calls it first thing in main(), after registering its job kinds.
std::optional<int> runWorkerIfAsked(int argc, char** argv);

// Serves the jobs that arrive on kWorkerChannelFd until the caller closes it; the exit status.
// For a process that is a worker already: exec'd in worker mode, or made by the fork server.
int serveAsWorker(const std::string& label);

// Whether this process is a worker.
bool inWorkerProcess();

// In a worker, says what the current job is doing now (its caller names it when the job dies or
// runs out of time there); elsewhere nothing.
void setWorkerPhase(const std::string& phase);

}  // namespace stickler
