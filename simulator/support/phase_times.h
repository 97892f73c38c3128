// Where a command's time goes at real sizes, without a profiler: with STICKLER_PHASE_TIMES=1 in
// its environment, a process prints to stderr each phase that takes time on a large model (the
// archive loaded, the example inputs run, an adapter applied, a model host made, a device run,
// the report saved) as it ends, with the seconds since the process started and the phase's own,
// and the memory the process holds: where a command's memory goes, too.
#pragma once

#include <string>

namespace stickler {

// Whether phases are printed (STICKLER_PHASE_TIMES is set and not "0"), read once.
bool phaseTimesWanted();

// Prints "stickler phase <since start> s (+<seconds> s) [own <GB> (large tensors <GB>, kept
// <GB>), peak <GB>] <what>" when wanted: the process's anonymous resident memory as the phase
// ends (what it holds of its own, not the archive's mapped weights), the part of it in tensors
// of 1 MiB and more and in freed ones kept for reuse (large_blocks.h), and its peak resident set
// size during the phase (mapped weights included; since the previous phase line, or since the
// process started where the kernel refuses the reset, as in a sandboxed worker). `seconds` < 0
// leaves the phase's own time out.
void notePhase(const std::string& what, double seconds = -1);

// Seconds since the process started: a phase's own time is the difference of two readings.
double phaseClock();

}  // namespace stickler
