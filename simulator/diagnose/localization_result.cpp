#include "simulator/diagnose/localization_result.h"

namespace stickler {

std::string operatorLabel(const std::string& op, int64_t node) {
  return op + " (node " + std::to_string(node) + ")";
}

const char* localizeStatusName(LocalizeStatus status) {
  switch (status) {
    case LocalizeStatus::kLocalized:
      return "localized";
    case LocalizeStatus::kLocalizedWithOtherCauses:
      return "localized_with_other_causes";
    case LocalizeStatus::kNeedsSeveral:
      return "needs_several";
    case LocalizeStatus::kSeveralCauses:
      return "several_causes";
    case LocalizeStatus::kBudgetExhausted:
      return "budget_exhausted";
    case LocalizeStatus::kPasses:
      return "passes";
    case LocalizeStatus::kNondeterministic:
      return "nondeterministic";
    case LocalizeStatus::kBlocked:
      return "blocked";
    case LocalizeStatus::kPassLocalized:
      return "pass_localized";
    case LocalizeStatus::kFailsWithoutPasses:
      return "fails_without_passes";
    case LocalizeStatus::kNoPassApplications:
      return "no_pass_applications";
    case LocalizeStatus::kFails:
      return "fails";
    case LocalizeStatus::kAborted:
      return "aborted";
    case LocalizeStatus::kTimedOut:
      return "timed_out";
    case LocalizeStatus::kFailed:
      return "failed";
  }
  return "?";
}

}  // namespace stickler
