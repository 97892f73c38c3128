// What a sandbox worker may use from the moment it runs code no one reviewed, enforced by the
// kernel: code that loops or allocates without end is killed (SIGXCPU) or fails to allocate,
// and only the worker ends.
#pragma once

#include <cstdint>

namespace stickler {

struct SandboxLimits {
  // From now on: wall-clock seconds (SIGALRM ends the worker, which its caller reports as not
  // finishing in time) and CPU seconds (RLIMIT_CPU: SIGXCPU); 0 for none.
  double seconds = 0;
  uint64_t extra_address_bytes = 0;  // RLIMIT_AS beyond what the worker maps now; 0 for none
};

// Applies `limits` to this process. Meant for a sandbox worker, once, after it read and made what
// it needs (the adapter file, the model) and before it runs the adapter's code: the time spent
// making the model is not the code's.
void enterSandbox(const SandboxLimits& limits);

// The address space this process maps now, in bytes.
uint64_t mappedBytes();

}  // namespace stickler
