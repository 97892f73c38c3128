#include "tools/reports/report_outcome.h"

#include "simulator/run/run_verdict.h"
#include "tools/reports/report_store.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string targetOf(const json& report) {
  if (std::string profile = stringField(report, "profile"); !profile.empty()) return profile;
  if (report.contains("backend")) {
    if (report["backend"].is_string()) return report["backend"];
    if (std::string spec = stringField(report["backend"], "spec"); !spec.empty()) return spec;
  }
  return "?";
}

std::string compileSummary(const json& report) {
  const size_t blockers = report.contains("blockers") ? report["blockers"].size() : 0;
  if (blockers == 0) return "the model compiles: no operator blocks it";
  size_t with_adapters = 0;
  for (const auto& blocker : report["blockers"]) {
    if (blocker.contains("adapters") && !blocker["adapters"].empty()) ++with_adapters;
  }
  return std::to_string(blockers) + " blocker(s), " + std::to_string(with_adapters) +
         " of them cleared by a catalog adapter; " +
         std::to_string(report.value("repro_bundles", 0)) + " repro bundle(s) written";
}

std::string runSummary(const json& report, const std::string& target) {
  const std::optional<RunVerdict> verdict = parseRunVerdict(stringField(report, "verdict"));
  std::string summary = "the model ";
  if (!verdict) {
    summary += "ran end to end on " + target;
  } else if (*verdict == RunVerdict::kBlocked) {
    summary += std::string(runVerdictVerb(*verdict)) + " for " + target;
  } else {
    summary += std::string(runVerdictVerb(*verdict)) + " end to end on " + target;
  }
  if (report.contains("failing_module")) {
    const json& pinned = report["failing_module"];
    summary += " in " + stringField(pinned, "module") + " (" + stringField(pinned, "op") + "), " +
               (pinned.value("confirmed", false) ? "confirmed alone on the device"
                                                 : "not confirmed alone on the device");
  }
  return summary;
}

}  // namespace

std::string stringField(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string()
             ? object[key].get<std::string>()
             : std::string();
}

std::string integerField(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_number_integer()
             ? std::to_string(object[key].get<int64_t>())
             : "?";
}

ReportOutcome reportOutcome(const json& report) {
  ReportOutcome outcome;
  outcome.kind = reportKind(report);
  outcome.model = report.contains("model") ? stringField(report["model"], "name") : "";
  outcome.target = targetOf(report);
  if (outcome.kind == "diagnose-compile") {
    outcome.status = stringField(report, "status");
    outcome.passed = outcome.status == "ok";
    outcome.summary = compileSummary(report);
  } else if (outcome.kind == "blocker_ranking") {
    size_t blocked = 0, models = 0;
    if (report.contains("models") && report["models"].is_array()) {
      models = report["models"].size();
      for (const auto& model : report["models"]) blocked += model.value("compiles", true) ? 0 : 1;
    }
    outcome.model = std::to_string(models) + " models";
    outcome.status = std::to_string(blocked) + " of " + std::to_string(models) + " blocked";
    outcome.passed = blocked == 0;
    outcome.summary = "no model is blocked";
    if (report.contains("ranking") && report["ranking"].is_array() && !report["ranking"].empty()) {
      const json& top = report["ranking"][0];
      outcome.summary = "the most blocking: " + stringField(top, "op") + " (" +
                        stringField(top, "rule") + ") stops " +
                        std::to_string(top.value("models_blocked", 0)) + " model(s)";
    }
  } else if (outcome.kind == "diagnose-run") {
    outcome.status = stringField(report, "verdict");
    outcome.passed = parseRunVerdict(outcome.status) == RunVerdict::kPass;
    outcome.summary = runSummary(report, outcome.target);
  } else {
    outcome.status = stringField(report, "status");
    outcome.passed = outcome.status == "passes";
    outcome.summary = stringField(report, "summary");
  }
  return outcome;
}

}  // namespace stickler
