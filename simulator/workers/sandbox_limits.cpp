#include "simulator/workers/sandbox_limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace stickler {

uint64_t mappedBytes() {
  unsigned long long pages = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%llu", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

SandboxScope::SandboxScope(const SandboxLimits& limits) {
  ::getrlimit(RLIMIT_CPU, &cpu_);
  ::getrlimit(RLIMIT_AS, &address_space_);
  if (limits.seconds > 0) {
    ::alarm(static_cast<unsigned>(limits.seconds + 0.999));
    // The limit counts from the process's start: what it used to get here is not the code's.
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const double used = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                        1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    rlimit cpu = cpu_;
    cpu.rlim_cur = std::min<rlim_t>(static_cast<rlim_t>(used + limits.seconds) + 1, cpu_.rlim_max);
    ::setrlimit(RLIMIT_CPU, &cpu);  // SIGXCPU at the soft limit
  }
  if (limits.extra_address_bytes > 0) {
    rlimit address_space = address_space_;
    address_space.rlim_cur = std::min<rlim_t>(
        static_cast<rlim_t>(mappedBytes() + limits.extra_address_bytes), address_space_.rlim_max);
    ::setrlimit(RLIMIT_AS, &address_space);
  }
}

SandboxScope::~SandboxScope() {
  ::alarm(0);
  ::setrlimit(RLIMIT_CPU, &cpu_);
  ::setrlimit(RLIMIT_AS, &address_space_);
}

}  // namespace stickler
