// What the `stickler` command exits with: one enum for every subcommand, decided here in the
// tools layer (the simulator reports verdicts, never exit codes). docs/cli.md lists them.
#pragma once

#include "simulator/run/run_verdict.h"

namespace stickler {

enum class ExitStatus : int {
  kOk = 0,
  kFailed = 1,     // the end-to-end verdict failed, or an adapter did not apply
  kBadInput = 2,   // a bad flag, path, archive, card or input: one line on stderr
  kBlocked = 3,    // the model does not compile: blockers, or the device compiler failed
  kAborted = 4,    // the device run aborted, hung or could not be carried out
  kInternal = 70,  // a bug in Stickler (EX_SOFTWARE)
};

// `stickler run` (and adapt, diagnose's run mode): the status of an end-to-end verdict.
ExitStatus exitStatusOf(RunVerdict verdict);

inline int exitCode(ExitStatus status) {
  return static_cast<int>(status);
}

}  // namespace stickler
