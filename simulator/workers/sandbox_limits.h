// What a sandbox worker may use from the moment it runs code no one reviewed, enforced by the
// kernel: code that loops or allocates without end is killed (SIGXCPU) or fails to allocate,
// and only the worker ends.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace stickler {

struct SandboxLimits {
  // From now on: wall-clock seconds (SIGALRM ends the worker, which its caller reports as not
  // finishing in time) and CPU seconds (RLIMIT_CPU: SIGXCPU); 0 for none.
  double seconds = 0;
  uint64_t extra_address_bytes = 0;  // RLIMIT_AS beyond what the worker maps now; 0 for none
};

// Applies `limits` to this process for as long as it lives: from after a sandbox worker read and
// made what it needs (the adapter file, the model) until it has run the adapter's code, so that
// the time spent making the model is not the code's. Soft limits only: when the job ends the
// worker lifts them and may serve the next job (the code it ran cannot call setrlimit).
class SandboxScope {
 public:
  explicit SandboxScope(const SandboxLimits& limits);
  ~SandboxScope();
  SandboxScope(const SandboxScope&) = delete;
  SandboxScope& operator=(const SandboxScope&) = delete;

 private:
  rlimit cpu_{};
  rlimit address_space_{};
};

// The address space this process maps now, in bytes.
uint64_t mappedBytes();

}  // namespace stickler
