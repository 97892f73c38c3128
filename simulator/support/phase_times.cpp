#include "simulator/support/phase_times.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "simulator/support/large_blocks.h"

namespace stickler {
namespace {

// Static initialization is as near to the process's start as the library can see.
const auto kStarted = std::chrono::steady_clock::now();

// "RssAnon" and "VmHWM" of /proc/self/status, in kB; -1 when unreadable.
struct ProcessMemory {
  long long own_kb = -1;
  long long peak_kb = -1;
};

ProcessMemory readProcessMemory() {
  ProcessMemory memory;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) memory.own_kb = std::atoll(line.c_str() + 8);
    if (line.rfind("VmHWM:", 0) == 0) memory.peak_kb = std::atoll(line.c_str() + 6);
  }
  return memory;
}

// The next phase's peak is its own: "5" resets the peak resident set size to the current one
// (proc(5), clear_refs). In a sandboxed worker the write is refused, and the peak stays the
// process's.
void resetPeak() {
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

std::string memoryText() {
  const ProcessMemory memory = readProcessMemory();
  if (memory.own_kb < 0 || memory.peak_kb < 0) return "";
  resetPeak();
  // The large tensors' peak is measured at every allocation, not sampled: a spike between two
  // lines (a weight widened, a run's transient results) shows in it where `peak` cannot (a
  // sandboxed worker's, never reset). Read after what is alive, so that it is never below it.
  const size_t large_live = largeBlocksLive();
  const size_t large_peak = largeBlocksLivePeak();
  resetLargeBlocksLivePeak();
  char text[160];
  std::snprintf(text, sizeof text,
                "[own %.2f GB (large tensors %.2f, at most %.2f, kept %.2f), peak %.2f GB] ",
                memory.own_kb / 1e6, large_live / 1e9, large_peak / 1e9, largeBlocksKept() / 1e9,
                memory.peak_kb / 1e6);
  return text;
}

}  // namespace

bool phaseTimesWanted() {
  static const bool wanted = [] {
    const char* value = std::getenv("STICKLER_PHASE_TIMES");
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
  }();
  return wanted;
}

double phaseClock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - kStarted).count();
}

void notePhase(const std::string& what, double seconds) {
  if (!phaseTimesWanted()) return;
  const std::string memory = memoryText();
  if (seconds >= 0) {
    std::fprintf(stderr, "stickler phase %9.4f s (+%.5f s) %s%s\n", phaseClock(), seconds,
                 memory.c_str(), what.c_str());
  } else {
    std::fprintf(stderr, "stickler phase %9.3f s %s%s\n", phaseClock(), memory.c_str(),
                 what.c_str());
  }
}

}  // namespace stickler
