#include "tools/framework/next_step.h"

#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

// "check_support (`stickler check`)": the MCP tool and the command that run the operation.
std::string call(std::string_view operation) {
  const Operation& named = operationNamed(operation);
  return named.name + " (`stickler " + named.cli.command + "`)";
}

}  // namespace

std::string nextStepFor(const LocalizationResult& result) {
  switch (result.status) {
    case LocalizeStatus::kBlocked:
      return "; see " + call("check_support") + " and " + call("adapt_model");
    case LocalizeStatus::kFailsWithoutPasses:
      return "; localize the module instead: " + call("localize_divergence") +
             " without passes (--passes)";
    case LocalizeStatus::kFails:
    case LocalizeStatus::kAborted:
    case LocalizeStatus::kTimedOut:
    case LocalizeStatus::kFailed:
      if (result.deviations && !result.deviations->empty()) {
        return ", a clue rather than a verdict: " + call("localize_divergence") +
               " proves which module flips the end-to-end verdict";
      }
      return ": " + call("localize_divergence") + " finds which module flips the verdict";
    default:
      return "";
  }
}

}  // namespace stickler
