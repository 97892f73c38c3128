// The fork server: one process per Stickler process, this binary exec'd in its fork-server mode,
// that makes workers by forking itself. A worker it makes has LibTorch linked and its operators
// registered already, so it starts in milliseconds instead of the 0.7-1 s an exec of this binary
// takes (ld.so's symbol lookups over 288 libraries, operator registration, page faults). It never
// runs a job and forks only while it has a single thread (checked at its start and before every
// fork), so a fork of it inherits no lock another thread holds.
//
// It is started by exec when the first worker is asked for (or ahead of it, by a process that
// knows it will ask: startForkServerAhead), not forked from main(): a fork would share every
// page of the asker copy-on-write, and on this kind of machine the asker's writes to them
// afterwards (LibTorch's destructors at exit alone) cost 0.3 s of faults per command.
//
// Each worker is made with CLONE_PARENT: it is the child of the process that asked, not of the
// fork server, so that process kills and reaps it as it would an exec'd worker, and sees how it
// died. Its descriptors, working directory and environment are the asker's at that moment, sent
// with the request, as posix_spawn would give them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace stickler {

// The argument that puts the binary in fork-server mode: `<binary> __forks`; its socket is on
// descriptor 3.
inline constexpr const char* kForkServerModeArgument = "__forks";

// A worker made by the fork server with these descriptors as its stdout and stderr, its channel
// and its progress block (worker_process.h). Starts the fork server on the first call, and again
// after it died (a few times). nullopt when there is none (STICKLER_FORK_SERVER=0, or it could
// not be started), or it could not make one: the caller then execs the worker itself. Throws
// std::runtime_error when the fork server died or stopped answering after it was given the
// descriptors (a worker it made may hold them). The descriptors stay the caller's to close.
std::optional<pid_t> forkWorker(const std::string& label, int output_fd, int channel_fd,
                                int progress_fd);

// Starts the fork server now, without waiting for it, for a process that knows it will ask for a
// worker soon (a device run's model host): the exec's second or so then passes while the process
// does its own work (loading the model, applying adapters) instead of before its first worker.
// Does nothing when one serves this process already, or there is to be none. The first
// forkWorker waits for it to be ready.
void startForkServerAhead();

// The fork-server mode's loop: makes a worker for each request on descriptor 3 until the process
// it serves closes its end. Returns the exit status.
int serveForkRequests();

}  // namespace stickler
