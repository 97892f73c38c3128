// What one end-to-end run of a model concluded: the `verdict` of stickler.run reports (and of the
// runs inside diagnose and localize reports), named and worded in one place.
#pragma once

#include <optional>
#include <string>

namespace stickler {

enum class RunVerdict {
  kPass,      // ran, and agrees with the CPU reference
  kFail,      // ran, and does not
  kBlocked,   // does not compile for the device
  kAborted,   // the device run died (a runtime abort)
  kTimedOut,  // the device run did not finish in time
  kFailed,    // the device run could not be carried out (the job threw)
};

// "pass", "fail", "blocked", "aborted", "timed_out", "failed": the reports' spelling.
const char* runVerdictName(RunVerdict verdict);
std::optional<RunVerdict> parseRunVerdict(const std::string& name);

// The verdict as what the model does, for sentences about it: "passes", "fails", "does not
// compile", "aborts", "times out", "fails to run".
const char* runVerdictVerb(RunVerdict verdict);

}  // namespace stickler
