#include "tools/reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "tools/reports/causes_section.h"
#include "tools/reports/decode_chart.h"
#include "tools/reports/html_page.h"
#include "tools/reports/report_outcome.h"
#include "tools/reports/report_text.h"

namespace stickler {
namespace {

using nlohmann::json;

// The module calls' paths use "" for the forward's own operators; reports say "<root>".
std::string moduleName(const json& entry) {
  const std::string path = stringField(entry, "module");
  return path.empty() ? "<root>" : path;
}

// Beyond the document look: the status badge, the callouts and the chart's colours.
constexpr const char* kStyle = R"(
.status{display:inline-block;padding:.1em .6em;border-radius:.3em;font-weight:600;color:#fff;background:#8a5a00}
.status.passed{background:#2e7d32}.status.failed{background:#c62828}
.callout{border-left:4px solid #c62828;background:#fdf1f1;padding:.6em 1em}
.callout.neutral{border-color:#5b7aa6;background:#f1f5fb}
svg .ok{fill:#7a9cc6}svg .over{fill:#e08a2c}svg .absorbed{fill:#c9a227}svg .culprit{fill:#c62828}
svg .threshold{stroke:#1d232b;stroke-width:2}svg .culprit-label{font-weight:bold;fill:#c62828}
)";

std::string header(const json& report, const ReportOutcome& outcome) {
  const std::string state = outcome.passed ? "passed" : "failed";
  std::string page = "<header>\n<h1>" + escapeMarkup(outcome.model) + " on " +
                     escapeMarkup(outcome.target) + "</h1>\n<p><span class=\"status " + state +
                     "\" id=\"status\">" + escapeMarkup(outcome.status) +
                     "</span> <span class=\"mono\">" + escapeMarkup(outcome.kind) +
                     "</span></p>\n<p id=\"summary\">" + escapeMarkup(outcome.summary) + "</p>\n";
  if (report.contains("model") && report["model"].is_object()) {
    page += "<p class=\"mono\">" + escapeMarkup(stringField(report["model"], "path")) +
            " &middot; sha256 " +
            escapeMarkup(stringField(report["model"], "sha256").substr(0, 16)) + "&hellip;</p>\n";
  }
  if (report.contains("adapters_applied") && !report["adapters_applied"].empty()) {
    page += "<p>Adapters applied first:";
    for (const auto& name : report["adapters_applied"]) {
      if (name.is_string()) page += " <code>" + escapeMarkup(name.get<std::string>()) + "</code>";
    }
    page += "</p>\n";
  }
  return page + "</header>\n";
}

// The facts a person triaging the model needs first, as a short list.
std::string triage(const json& report, const ReportOutcome& outcome) {
  std::vector<std::string> items;
  if (report.contains("blockers") && report["blockers"].is_array()) {
    std::set<std::string> rules, ops;
    for (const auto& blocker : report["blockers"]) {
      rules.insert(stringField(blocker, "rule"));
      ops.insert(stringField(blocker, "op"));
    }
    items.emplace_back(std::to_string(report["blockers"].size()) +
                       " compile blocker(s): " + std::to_string(ops.size()) + " operator(s), " +
                       std::to_string(rules.size()) + " rule(s)");
  }
  if (report.contains("numerics") && report["numerics"].contains("modules")) {
    size_t over = 0;
    for (const auto& entry : report["numerics"]["modules"])
      over += entry.value("over_threshold", false);
    items.emplace_back(std::to_string(report["numerics"]["modules"].size()) +
                       " module call(s) compared in lockstep, " + std::to_string(over) +
                       " over their threshold");
  }
  if (report.contains("absorbed") && !report["absorbed"].empty()) {
    items.emplace_back(std::to_string(report["absorbed"].size()) +
                       " deviation(s) absorbed downstream: over threshold, yet not the cause");
  }
  if (report.contains("device_runs")) {
    items.emplace_back(integerField(report, "device_runs") + " device run(s), target at most " +
                       integerField(report, "device_run_target"));
  }
  if (report.contains("budget") && report["budget"].is_object() &&
      report["budget"].value("exhausted", false)) {
    items.emplace_back("the run budget of " + integerField(report["budget"], "max_runs") +
                       " device runs ended the search before it was decided (see Causes)");
  }
  if (report.contains("determinism") && report["determinism"].is_object()) {
    items.emplace_back(report["determinism"].value("deterministic", false)
                           ? "two identical device runs agree: the device is deterministic here"
                           : "two identical device runs disagree: nondeterministic");
  }
  if (!outcome.passed && outcome.kind == "diagnose-compile") {
    items.emplace_back(
        "next: `stickler adapt` applies the catalog adapters listed below; a blocker "
        "without one needs a new adapter or a backend fix (hand over its repro)");
  }
  if (items.empty()) return "";
  std::string section = "<section id=\"triage\">\n<h2>Triage</h2>\n<ul>\n";
  for (const auto& item : items) section += "<li>" + escapeMarkup(item) + "</li>\n";
  return section + "</ul>\n</section>\n";
}

// A repro bundle's command, whether it was checked, and what it holds.
std::string reproParagraph(const json& holder) {
  if (!holder.contains("repro") || !holder["repro"].is_object()) return "";
  const json& bundle = holder["repro"];
  if (!bundle.contains("command"))
    return "<p>No repro bundle: " + escapeMarkup(stringField(bundle, "error")) + "</p>\n";
  std::string paragraph =
      "<p>Repro (" + escapeMarkup(stringField(bundle, "scope")) + ", " +
      (bundle.value("reproduces", false) ? "checked to fail the same way" : "NOT reproduced") +
      "): <code class=\"repro\">" + escapeMarkup(stringField(bundle, "command")) + "</code>";
  // A numerical failure's control: the same archive passes without the profile's faults.
  if (bundle.contains("numerics") && bundle["numerics"].contains("clean_command")) {
    paragraph += "; without the profile's fault rules (" +
                 escapeMarkup(stringField(bundle["numerics"], "clean_observed")) +
                 "): <code class=\"repro\">" +
                 escapeMarkup(stringField(bundle["numerics"], "clean_command")) + "</code>";
  }
  return paragraph + "</p>\n";
}

std::string compilerFailure(const json& report) {
  if (!report.contains("compiler_failure")) return "";
  const json& failure = report["compiler_failure"];
  return "<section id=\"compiler-failure\" class=\"callout\">\n<h2>The device compiler "
         "failed</h2>\n<p>In <code>" +
         escapeMarkup(stringField(failure, "op")) + "</code> of <code>" +
         escapeMarkup(stringField(failure, "module")) + "</code> (" +
         escapeMarkup(stringField(failure, "module_class")) +
         "): " + escapeMarkup(stringField(failure, "message")) + "</p>\n" +
         reproParagraph(failure) + "</section>\n";
}

std::string culprit(const json& report) {
  std::string section;
  if (report.contains("culprit") && report["culprit"].is_object()) {
    const json& found = report["culprit"];
    const std::string status = stringField(report, "status");
    std::string title = "Causal culprit";
    if (status == "needs_several") title = "Fails only together with other modules";
    if (status == "localized_with_other_causes") title = "Causal culprit (and other causes)";
    if (status == "several_causes") title = "The first of several causes";
    if (status == "budget_exhausted") title = "The first cause (the run budget ended the search)";
    section = "<section id=\"culprit\" class=\"callout\">\n<h2>" + title +
              "</h2>\n<p><code "
              "id=\"culprit-module\">" +
              escapeMarkup(stringField(found, "module")) + "</code> (" +
              escapeMarkup(stringField(found, "module_class")) + "), module " +
              integerField(found, "position") + " of " + integerField(report, "units") +
              " in execution order.</p>\n";
    if (report.contains("confirmation")) {
      const json& confirmation = report["confirmation"];
      section +=
          "<p>Alone on the device the model: <b>" +
          escapeMarkup(stringField(confirmation, "alone_on_device")) +
          "</b>; everything else on the device, it on the CPU: <b>" +
          escapeMarkup(stringField(confirmation, "everything_else_on_device")) + "</b> &rarr; " +
          (confirmation.value("confirmed", false) ? "confirmed" : "not confirmed") + ".</p>\n";
    }
    if (found.contains("deviation") && found["deviation"].is_object()) {
      const json& deviation = found["deviation"];
      const std::string error =
          deviation["rel_l2"].is_number() ? metricText(deviation["rel_l2"]) : "non-finite";
      section += "<p>Its error: relative L2 " + error + " against a threshold of " +
                 metricText(deviation["threshold"]) + " (" +
                 metricText(deviation["ratio_to_emulated"]) +
                 "&times; the emulated format's).</p>\n";
    }
    if (report.contains("culprit_operators") && report["culprit_operators"].is_object()) {
      const json& found = report["culprit_operators"];
      const std::string candidates = integerField(found, "candidates");
      section += "<p id=\"culprit-operator\">" +
                 (candidates == "1" ? std::string("Its only operator:")
                                    : "Within it, of its " + candidates + " operators (" +
                                          integerField(found, "runs") + " runs):");
      for (const auto& op : found.value("operators", json::array()))
        section += " <code>" + escapeMarkup(stringField(op, "where")) + "</code>";
      if (candidates != "1" && found.contains("confirmation")) {
        const json& confirmation = found["confirmation"];
        section += "; alone on the device the model <b>" +
                   escapeMarkup(stringField(confirmation, "alone_on_device")) +
                   "</b>, with the module's other operators there <b>" +
                   escapeMarkup(stringField(confirmation, "everything_else_on_device")) + "</b>";
      }
      section += ".</p>\n";
    }
    if (report.contains("numerics_onset") && report["numerics_onset"].is_object()) {
      section += "<p id=\"numerics-onset\">Numerics: " +
                 escapeMarkup(stringField(report["numerics_onset"], "explanation")) + ".</p>\n";
    }
    section += reproParagraph(report);
    if (report.contains("together")) {
      section += "<p>The minimal set that fails the model only together:";
      for (const auto& module : report["together"])
        section += " <code>" + escapeMarkup(stringField(module, "module")) + "</code>";
      section += "</p>\n";
    }
    return section + "</section>\n";
  }
  if (report.contains("failing_module")) {
    const json& pinned = report["failing_module"];
    return "<section id=\"culprit\" class=\"callout\">\n<h2>Failing module</h2>\n<p><code "
           "id=\"culprit-module\">" +
           escapeMarkup(stringField(pinned, "module")) + "</code> (" +
           escapeMarkup(stringField(pinned, "module_class")) + ") was running <code>" +
           escapeMarkup(stringField(pinned, "op")) + "</code> when the device died; " +
           (pinned.value("confirmed", false) ? "alone on the device it fails the same way"
                                             : "not confirmed alone on the device") +
           ".</p>\n" + reproParagraph(pinned) + "</section>\n";
  }
  if (report.contains("pass_culprit")) {
    const json& found = report["pass_culprit"];
    return "<section id=\"culprit\" class=\"callout\">\n<h2>Culprit pass application</h2>\n<p>" +
           escapeMarkup(stringField(found, "pass")) + " application " +
           integerField(found, "application") + " of " + integerField(report, "pass_applications") +
           ": <code id=\"culprit-module\">" + escapeMarkup(stringField(found, "op")) +
           "</code> in <code>" + escapeMarkup(stringField(found, "module")) +
           "</code> into the kernel of <code>" + escapeMarkup(stringField(found, "into_op")) +
           "</code> in <code>" + escapeMarkup(stringField(found, "into_module")) +
           "</code>.</p>\n</section>\n";
  }
  return "";
}

// One row per module call: its relative L2 error as a bar on a log scale, its threshold as a
// tick; the culprit in red, absorbed onsets in gold, other deviations in orange.
std::string chart(const json& report) {
  if (!report.contains("numerics") || !report["numerics"].contains("modules")) return "";
  const json& modules = report["numerics"]["modules"];
  if (modules.empty()) return "";
  const std::string culprit_module =
      report.contains("culprit") ? stringField(report["culprit"], "module") : std::string();
  std::set<std::string> absorbed;
  if (report.contains("absorbed")) {
    for (const auto& entry : report["absorbed"]) absorbed.insert(moduleName(entry));
  }
  double smallest = 1e300, largest = 0;
  for (const auto& entry : modules) {
    for (const char* key : {"rel_l2", "threshold"}) {
      if (!entry.contains(key) || !entry[key].is_number()) continue;
      const double value = entry[key];
      if (value > 0) smallest = std::min(smallest, value), largest = std::max(largest, value);
    }
  }
  if (largest == 0) smallest = 1e-6, largest = 1;
  const int low = std::max(-12, static_cast<int>(std::floor(std::log10(smallest))));
  const int high = std::max(low + 1, static_cast<int>(std::ceil(std::log10(largest))));
  const double left = 340, width = 500, row = 16, top = 24;
  auto x = [&](double value) {
    const double decades = std::log10(std::max(value, std::pow(10.0, low))) - low;
    return left + width * std::min(1.0, decades / (high - low));
  };
  const double height = top + row * static_cast<double>(modules.size()) + 6;
  char buffer[256];
  std::string svg =
      "<svg id=\"module-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1060\" height=\"" +
      std::to_string(static_cast<int>(height)) +
      "\" role=\"img\" aria-label=\"relative L2 error per module against its threshold\">\n";
  for (int decade = low; decade <= high; ++decade) {
    const double at = left + width * (decade - low) / (high - low);
    std::snprintf(buffer, sizeof buffer,
                  "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                  "<text x=\"%.1f\" y=\"14\" text-anchor=\"middle\">1e%d</text>\n",
                  at, top - 4, at, height, at, decade);
    svg += buffer;
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& entry = modules[i];
    const std::string name = moduleName(entry);
    const bool is_culprit = !culprit_module.empty() && name == culprit_module;
    const bool non_finite = !entry["rel_l2"].is_number();
    const bool over = entry.value("over_threshold", false);
    const std::string kind = is_culprit             ? "culprit"
                             : absorbed.count(name) ? "absorbed"
                             : over                 ? "over"
                                                    : "ok";
    const double y = top + row * static_cast<double>(i);
    const double end = non_finite ? left + width : x(entry["rel_l2"].get<double>());
    std::string label = name.size() > 44 ? "…" + name.substr(name.size() - 43) : name;
    svg += "<g class=\"row " + kind + "-row\" data-module=\"" + escapeMarkup(name) + "\"><title>" +
           escapeMarkup(name) + " (" + escapeMarkup(stringField(entry, "module_class")) +
           "): relative L2 " +
           (non_finite ? std::string("non-finite") : metricText(entry["rel_l2"])) + ", threshold " +
           metricText(entry["threshold"]) + ", " + metricText(entry["ratio_to_emulated"]) +
           "x the emulated format's</title>\n";
    std::snprintf(buffer, sizeof buffer, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"%s>",
                  left - 8, y + 11, is_culprit ? " class=\"culprit-label\"" : "");
    svg += buffer + escapeMarkup(label) + "</text>";
    std::snprintf(buffer, sizeof buffer,
                  "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>",
                  kind.c_str(), left, y + 2, std::max(1.0, end - left), row - 4);
    svg += buffer;
    if (entry.contains("threshold") && entry["threshold"].is_number()) {
      const double at = x(entry["threshold"].get<double>());
      std::snprintf(buffer, sizeof buffer,
                    "<line class=\"threshold\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
                    at, y + 1, at, y + row - 1);
      svg += buffer;
    }
    std::snprintf(buffer, sizeof buffer, "<text x=\"%.1f\" y=\"%.1f\">", left + width + 10, y + 11);
    svg += buffer +
           escapeMarkup((non_finite ? std::string("non-finite") : metricText(entry["rel_l2"])) +
                        " / " + metricText(entry["threshold"])) +
           "</text></g>\n";
  }
  svg += "</svg>\n";
  std::string section =
      "<section id=\"numerics\">\n<h2>Per-module error against threshold</h2>\n<p>Relative L2 "
      "error of each module call's outputs, device against the CPU reference, in execution "
      "order (log scale). The tick is the module's threshold: " +
      metricText(report["numerics"]["thresholds"].value("margin", json())) + "&times; the " +
      metricText(report["numerics"]["thresholds"].value("percentile", json())) +
      " percentile of the emulated format's error over " +
      integerField(report["numerics"]["thresholds"], "input_sets") + " input set(s).</p>\n";
  section +=
      "<p class=\"legend\"><span><i class=\"swatch\" style=\"background:#7a9cc6\"></i>within "
      "threshold</span><span><i class=\"swatch\" style=\"background:#e08a2c\"></i>over "
      "threshold</span><span><i class=\"swatch\" style=\"background:#c9a227\"></i>absorbed "
      "downstream</span><span><i class=\"swatch\" style=\"background:#c62828\"></i>causal "
      "culprit</span></p>\n";
  return section + svg + "</section>\n";
}

// A report made over a decode: each step's figures, the localized step outlined.
std::string decodeSection(const json& report) {
  if (!report.contains("decode") || !report["decode"].is_object()) return "";
  const json& decode = report["decode"];
  const json& localized = decode.value("localized_step", json());
  std::string section =
      "<section id=\"decode\">\n<h2>Decode, step by step</h2>\n<p>The prefill and " +
      integerField(decode, "steps") +
      " greedy step(s) on the device and on the CPU reference, the reference's token fed to "
      "both. " +
      (localized.is_number()
           ? std::string(localized.get<int64_t>() == 0 ? "The prefill"
                                                       : "Step " + localized.dump()) +
                 " (outlined) is what this page examines, on the inputs the reference fed it."
           : std::string("Every step passes; this page examines the prefill.")) +
      "</p>\n";
  section += decodeChartLegend();
  section += decodeStepChart(decode.value("per_step", json::array()), "decode-chart",
                             localized.is_number() ? localized.get<int64_t>() : -1);
  return section + "</section>\n";
}

std::string absorbedTable(const json& report) {
  if (!report.contains("absorbed") || report["absorbed"].empty()) return "";
  std::string section =
      "<section id=\"absorbed\">\n<h2>Absorbed deviations</h2>\n<p>Over their threshold, yet "
      "the model passes with them on the device: later layers absorb them. Clues, not "
      "causes.</p>\n<table>\n<tr><th>module</th><th>class</th><th>relative "
      "L2</th><th>threshold</th>"
      "<th>&times; emulated</th><th>modules downstream over threshold</th></tr>\n";
  for (const auto& entry : report["absorbed"]) {
    section += "<tr><td><code>" + escapeMarkup(moduleName(entry)) + "</code></td><td>" +
               escapeMarkup(stringField(entry, "module_class")) + "</td><td class=\"num\">" +
               metricText(entry["rel_l2"]) + "</td><td class=\"num\">" +
               metricText(entry["threshold"]) + "</td><td class=\"num\">" +
               metricText(entry["ratio_to_emulated"]) + "</td><td class=\"num\">" +
               integerField(entry, "downstream_over_threshold") + "</td></tr>\n";
  }
  return section + "</table>\n</section>\n";
}

std::string blockersTable(const json& report) {
  if (!report.contains("blockers") || !report["blockers"].is_array() ||
      report["blockers"].empty()) {
    return "";
  }
  std::string section =
      "<section id=\"blockers\">\n<h2>Compile "
      "blockers</h2>\n<table>\n<tr><th>rule</th><th>operator</th>"
      "<th>module</th><th>why</th><th>adapters that clear "
      "it</th><th>repro</th><th>read</th></tr>\n";
  for (const auto& blocker : report["blockers"]) {
    std::string adapters;
    if (blocker.contains("adapters")) {
      for (const auto& name : blocker["adapters"]) {
        if (name.is_string())
          adapters += "<code>" + escapeMarkup(name.get<std::string>()) + "</code> ";
      }
    }
    std::string hints;  // knowledge-base pages, by id (their URIs are for MCP clients)
    if (blocker.contains("hints") && blocker["hints"].is_array()) {
      for (const auto& hint : blocker["hints"]) {
        hints += "<code title=\"" + escapeMarkup(stringField(hint, "title")) + "\">" +
                 escapeMarkup(stringField(hint, "id")) + "</code> ";
      }
    }
    std::string repro;
    if (blocker.contains("repro") && blocker["repro"].is_object()) {
      const json& bundle = blocker["repro"];
      repro = bundle.contains("command")
                  ? "<code>" + escapeMarkup(stringField(bundle, "command")) + "</code>" +
                        (bundle.value("reproduces", false) ? " (checked)" : " (not reproduced)")
                  : escapeMarkup(stringField(bundle, "error"));
    }
    section += "<tr><td>" + escapeMarkup(stringField(blocker, "rule")) + "</td><td><code>" +
               escapeMarkup(stringField(blocker, "op")) + "</code></td><td><code>" +
               escapeMarkup(stringField(blocker, "module")) + "</code> (" +
               escapeMarkup(stringField(blocker, "module_class")) + ")</td><td>" +
               escapeMarkup(stringField(blocker, "message")) + "</td><td>" + adapters +
               "</td><td>" + repro + "</td><td>" + hints + "</td></tr>\n";
  }
  return section + "</table>\n</section>\n";
}

std::string rankingTable(const json& report) {
  if (!report.contains("ranking") || !report["ranking"].is_array()) return "";
  std::string section =
      "<section id=\"ranking\">\n<h2>Blockers ranked across models</h2>\n<p>The blocker that "
      "stops the most models first: build (or adapt) it first.</p>\n<table>\n<tr><th>models "
      "blocked</th><th>occurrences</th><th>rule</th><th>operator</th><th>models</th><th>module "
      "classes</th></tr>\n";
  auto joined = [](const json& list) {
    std::string names;
    if (!list.is_array()) return names;
    for (const auto& name : list) {
      if (name.is_string()) names += (names.empty() ? "" : ", ") + name.get<std::string>();
    }
    return names;
  };
  for (const auto& entry : report["ranking"]) {
    section += "<tr><td class=\"num\">" + integerField(entry, "models_blocked") +
               "</td><td class=\"num\">" + integerField(entry, "occurrences") + "</td><td>" +
               escapeMarkup(stringField(entry, "rule")) + "</td><td><code>" +
               escapeMarkup(stringField(entry, "op")) + "</code></td><td>" +
               escapeMarkup(joined(entry["models"])) + "</td><td>" +
               escapeMarkup(joined(entry["module_classes"])) + "</td></tr>\n";
  }
  return section + "</table>\n</section>\n";
}

std::string runsTable(const json& report) {
  if (!report.contains("runs") || !report["runs"].is_array() || report["runs"].empty()) return "";
  std::string section =
      "<section id=\"device-runs\">\n<h2>Device runs</h2>\n<table>\n"
      "<tr><th>#</th><th>on the device</th><th>verdict</th></tr>\n";
  size_t index = 0;
  for (const auto& trial : report["runs"]) {
    section += "<tr><td class=\"num\">" + std::to_string(++index) + "</td><td>" +
               escapeMarkup(stringField(trial, "device")) + "</td><td>" +
               escapeMarkup(stringField(trial, "verdict")) + "</td></tr>\n";
  }
  return section + "</table>\n</section>\n";
}

// The JSON document, inside the page for tools; "<" is escaped so no string in it can close
// the script element.
std::string embeddedJson(const json& report) {
  std::string dumped = report.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string safe;
  safe.reserve(dumped.size());
  for (char c : dumped) safe += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return "<script type=\"application/json\" id=\"report-json\">" + safe + "</script>\n";
}

}  // namespace

std::string renderHtmlReport(const json& report) {
  const ReportOutcome outcome = reportOutcome(report);
  std::string body = header(report, outcome);
  body += triage(report, outcome);
  body += culprit(report);
  body += causesSection(report);
  body += compilerFailure(report);
  body += decodeSection(report);
  body += chart(report);
  body += absorbedTable(report);
  body += blockersTable(report);
  body += rankingTable(report);
  body += runsTable(report);
  body += embeddedJson(report);
  body += "<footer><p class=\"mono\">" + escapeMarkup(stringField(report, "schema")) + " version " +
          integerField(report, "version") + "</p></footer>\n";
  return renderHtmlPage({.title = "Stickler " + outcome.kind + ": " + outcome.model + " on " +
                                  outcome.target + " (" + outcome.status + ")",
                         .style = std::string(kDocumentStyle) + kStyle + kDecodeChartStyle,
                         .body = body});
}

}  // namespace stickler
