#include "tools/reports/junit_report.h"

#include <vector>

#include "tools/reports/html_page.h"
#include "tools/reports/report_outcome.h"

namespace stickler {
namespace {

using nlohmann::json;

struct TestCase {
  std::string name;
  std::string failure_type;  // empty: passed
  std::string message;
  std::string details;
};

std::vector<TestCase> testCases(const json& report, const ReportOutcome& outcome) {
  std::vector<TestCase> cases;
  TestCase verdict{outcome.kind == "diagnose-compile" ? "compiles on " + outcome.target
                                                      : "end to end on " + outcome.target,
                   "", "", ""};
  if (!outcome.passed) {
    verdict.failure_type = outcome.status;
    verdict.message = outcome.summary;
    if (report.contains("culprit")) {
      verdict.details = "culprit: " + stringField(report["culprit"], "module") + " (" +
                        stringField(report["culprit"], "module_class") + ")\n";
    }
  }
  for (const char* holder : {"compiler_failure", "failing_module"}) {
    if (!report.contains(holder) || !report[holder].contains("repro")) continue;
    const std::string command = stringField(report[holder]["repro"], "command");
    if (!command.empty()) verdict.details += "repro: " + command + "\n";
  }
  cases.push_back(verdict);
  if (report.contains("blockers") && report["blockers"].is_array()) {
    for (const auto& blocker : report["blockers"]) {
      TestCase entry{stringField(blocker, "op") + " in " + stringField(blocker, "module"),
                     stringField(blocker, "rule"), stringField(blocker, "message"), ""};
      if (blocker.contains("repro")) {
        const std::string command = stringField(blocker["repro"], "command");
        if (!command.empty()) entry.details += "repro: " + command + "\n";
      }
      if (blocker.contains("adapters") && !blocker["adapters"].empty()) {
        entry.details += "adapters that clear it:";
        for (const auto& name : blocker["adapters"]) {
          if (name.is_string()) entry.details += " " + name.get<std::string>();
        }
        entry.details += "\n";
      }
      cases.push_back(entry);
    }
  }
  if (outcome.kind == "blocker_ranking" && report.contains("models") &&
      report["models"].is_array()) {
    cases.clear();  // a test case per model, as a coverage sweep reads it
    for (const auto& model : report["models"]) {
      TestCase entry{"compiles: " + stringField(model, "model") + " on " + outcome.target, "", "",
                     ""};
      if (!model.value("compiles", true)) {
        entry.failure_type = "blocked";
        entry.message = std::to_string(model.value("blockers", 0)) + " blocker(s)";
        entry.details = stringField(model, "path") + "\n";
      }
      cases.push_back(entry);
    }
  }
  return cases;
}

}  // namespace

std::string renderJunitReport(const json& report) {
  const ReportOutcome outcome = reportOutcome(report);
  const std::vector<TestCase> cases = testCases(report, outcome);
  size_t failures = 0;
  for (const auto& entry : cases) failures += entry.failure_type.empty() ? 0 : 1;
  const std::string suite = "stickler " + outcome.kind + " " + outcome.model;
  const std::string counts = " tests=\"" + std::to_string(cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\"";
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"stickler\"" +
                    counts + ">\n  <testsuite name=\"" + escapeMarkup(suite) + "\"" + counts +
                    " errors=\"0\" skipped=\"0\">\n";
  const std::string classname =
      escapeMarkup("stickler." + outcome.kind + "." +
                   (outcome.kind == "blocker_ranking" ? outcome.target : outcome.model));
  for (const auto& entry : cases) {
    xml +=
        "    <testcase classname=\"" + classname + "\" name=\"" + escapeMarkup(entry.name) + "\"";
    if (entry.failure_type.empty()) {
      xml += "/>\n";
      continue;
    }
    xml += ">\n      <failure type=\"" + escapeMarkup(entry.failure_type) + "\" message=\"" +
           escapeMarkup(entry.message) + "\">" + escapeMarkup(entry.details) +
           "</failure>\n    </testcase>\n";
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace stickler
