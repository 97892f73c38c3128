#include "tools/framework/exit_status.h"

namespace stickler {

ExitStatus exitStatusOf(RunVerdict verdict) {
  switch (verdict) {
    case RunVerdict::kPass:
      return ExitStatus::kOk;
    case RunVerdict::kFail:
      return ExitStatus::kFailed;
    case RunVerdict::kBlocked:
      return ExitStatus::kBlocked;
    case RunVerdict::kAborted:
    case RunVerdict::kTimedOut:
    case RunVerdict::kFailed:
      return ExitStatus::kAborted;
  }
  return ExitStatus::kInternal;
}

}  // namespace stickler
