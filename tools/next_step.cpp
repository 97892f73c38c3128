#include "tools/next_step.h"

#include <string>

#include "tools/operation_table.h"

namespace stickler {
namespace {

// "check_support (`stickler check`)": the MCP tool and the command that run the operation.
std::string call(std::string_view operation) {
  const Operation& named = operationNamed(operation);
  return named.name + " (`stickler " + named.cli.command + "`)";
}

std::string nextStepFor(const nlohmann::json& report) {
  const std::string status = report.value("status", "");
  if (status == "blocked") {
    return "; see " + call("check_support") + " and " + call("adapt_model");
  }
  if (status == "fails_without_passes") {
    return "; localize the module instead: " + call("localize_divergence") +
           " without passes (--passes)";
  }
  const bool numerics =
      report.value("schema", "") == "stickler.diagnose" && report.value("mode", "") == "numerics";
  if (!numerics || status == "passes") return "";
  if (report.contains("deviations") && !report["deviations"].empty()) {
    return ", a clue rather than a verdict: " + call("localize_divergence") +
           " proves which module flips the end-to-end verdict";
  }
  return ": " + call("localize_divergence") + " finds which module flips the verdict";
}

}  // namespace

void addNextStep(nlohmann::json& report) {
  const std::string step = nextStepFor(report);
  if (!step.empty()) report["summary"] = report.value("summary", "") + step;
}

}  // namespace stickler
