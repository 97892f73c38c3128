// How much memory this process may still take, read before a load that could take more.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stickler {

// The kernel's estimate of memory available without swapping (MemAvailable in /proc/meminfo:
// free memory and the page cache it can reclaim), or less when a cgroup v2 limit binds the
// process (memory.max minus memory.current). nullopt when neither can be read.
std::optional<uint64_t> availableMemoryBytes();

// "16.0 GB": bytes for a message, in decimal units as `free -h --si` and the issue reports say.
std::string gigabytesText(uint64_t bytes);

}  // namespace stickler
