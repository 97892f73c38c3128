#include "simulator/support/phase_times.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stickler {
namespace {

// Static initialization is as near to the process's start as the library can see.
const auto kStarted = std::chrono::steady_clock::now();

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
  if (seconds >= 0) {
    std::fprintf(stderr, "stickler phase %9.4f s (+%.5f s) %s\n", phaseClock(), seconds,
                 what.c_str());
  } else {
    std::fprintf(stderr, "stickler phase %9.3f s %s\n", phaseClock(), what.c_str());
  }
}

}  // namespace stickler
