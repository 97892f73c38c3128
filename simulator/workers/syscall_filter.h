// What adapter code may not ask the kernel for, enforced by a seccomp filter in the sandbox
// worker that runs it, beyond its limits on time and memory (sandbox_limits.h): no file opened
// for writing and no file created, renamed or removed; no new process (fork, exec); no socket;
// no signal to another process. Each is refused with EPERM. What the worker already holds (its
// channel, its stderr) it keeps, and it may still read files and start threads.
#pragma once

namespace stickler {

// Installs the filter for this process and every thread it starts, for good: a filter cannot be
// lifted. Throws std::runtime_error when the kernel refuses it (the sandbox then does not run
// the code at all).
void denySystemCallsForAdapterCode();

// Whether this process has installed it.
bool systemCallsDeniedForAdapterCode();

}  // namespace stickler
