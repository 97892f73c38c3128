#include "simulator/run/run_verdict.h"

namespace stickler {
namespace {

struct Wording {
  RunVerdict verdict;
  const char* name;
  const char* verb;
};

constexpr Wording kWordings[] = {
    {RunVerdict::kPass, "pass", "passes"},
    {RunVerdict::kFail, "fail", "fails"},
    {RunVerdict::kBlocked, "blocked", "does not compile"},
    {RunVerdict::kAborted, "aborted", "aborts"},
    {RunVerdict::kTimedOut, "timed_out", "times out"},
    {RunVerdict::kFailed, "failed", "fails to run"},
};

const Wording& wordingOf(RunVerdict verdict) {
  for (const Wording& wording : kWordings) {
    if (wording.verdict == verdict) return wording;
  }
  return kWordings[1];  // unreachable: every verdict has its wording
}

}  // namespace

const char* runVerdictName(RunVerdict verdict) {
  return wordingOf(verdict).name;
}

const char* runVerdictVerb(RunVerdict verdict) {
  return wordingOf(verdict).verb;
}

std::optional<RunVerdict> parseRunVerdict(const std::string& name) {
  for (const Wording& wording : kWordings) {
    if (name == wording.name) return wording.verdict;
  }
  return std::nullopt;
}

}  // namespace stickler
