#include "simulator/support/available_memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace stickler {
namespace {

std::optional<uint64_t> meminfoAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kilobytes = 0;
  std::string unit;
  while (meminfo >> key >> kilobytes >> unit) {
    if (key == "MemAvailable:") return kilobytes * 1024;
  }
  return std::nullopt;
}

std::optional<uint64_t> readNumber(const std::string& path) {
  std::ifstream file(path);
  std::string text;
  if (!(file >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The cgroup v2 group this process belongs to ("0::/path" in /proc/self/cgroup).
std::optional<uint64_t> cgroupAvailable() {
  std::ifstream membership("/proc/self/cgroup");
  std::string line;
  while (std::getline(membership, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    const std::string group = "/sys/fs/cgroup" + line.substr(3);
    const auto limit = readNumber(group + "/memory.max");
    const auto used = readNumber(group + "/memory.current");
    if (!limit || !used) return std::nullopt;
    return *limit > *used ? *limit - *used : 0;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> availableMemoryBytes() {
  const auto system = meminfoAvailable();
  const auto group = cgroupAvailable();
  if (system && group) return std::min(*system, *group);
  return system ? system : group;
}

std::string gigabytesText(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

}  // namespace stickler
