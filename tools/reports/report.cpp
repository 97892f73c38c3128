// report: a saved diagnosis or localization report, as JSON, as a self-contained HTML page or as
// JUnit XML, by id (the most recent one when no id is given).
#include "simulator/support/errors.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/html_report.h"
#include "tools/reports/junit_report.h"
#include "tools/reports/report_outcome.h"
#include "tools/reports/report_store.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const ReportStore store(context.workspaceRoot());
  // The schema's enum and default, checked and filled by runOperation.
  const std::string format = input.at("format");
  const std::vector<std::string> ids = store.ids();
  if (format == "list") {
    json reports = json::array();
    const size_t limit =
        context.listLimit() == 0 ? ids.size() : std::min(ids.size(), context.listLimit());
    for (size_t i = 0; i < limit; ++i) {
      json report;
      try {
        report = store.load(ids[i]);
      } catch (const UserError& e) {
        // One unreadable file (not JSON, say) is listed with why; the others still are.
        reports.push_back({{"id", ids[i]}, {"error", e.what()}});
        continue;
      }
      const ReportOutcome outcome = reportOutcome(report);
      reports.push_back({{"id", ids[i]},
                         {"kind", outcome.kind},
                         {"model", outcome.model},
                         {"target", outcome.target},
                         {"status", outcome.status},
                         {"passed", outcome.passed}});
    }
    return {{"format", "list"},
            {"directory", store.directory()},
            {"total", ids.size()},
            {"reports", reports}};
  }
  std::string id;
  if (input.contains("id")) {
    id = requireString(input, "id");
  } else if (ids.empty()) {
    throw UserError("no report saved yet in " + store.directory() +
                    ": run diagnose_model or localize_divergence first");
  } else {
    id = ids.front();
  }
  const json report = store.load(id);
  json output = {{"id", id}, {"format", format}, {"path", *store.pathOf(id)}};
  if (format == "json") {
    output["report"] = report;
  } else {
    output["text"] = format == "html" ? renderHtmlReport(report) : renderJunitReport(report);
  }
  return output;
}

std::string renderText(const json& output) {
  if (output["format"] == "list") {
    std::string text;
    for (const auto& entry : output["reports"]) {
      text += entry["id"].get<std::string>() + "  " +
              (entry.contains("error") ? "unreadable: " + entry["error"].get<std::string>()
                                       : entry["status"].get<std::string>()) +
              "\n";
    }
    return text.empty() ? "no reports in " + output["directory"].get<std::string>() + "\n" : text;
  }
  if (output["format"] == "json") return output["report"].dump(2) + "\n";
  return output["text"].get<std::string>();
}

}  // namespace

Operation makeGetReportOperation() {
  Operation operation;
  operation.name = "get_report";
  operation.title = "Read a saved diagnosis or localization report";
  operation.description =
      "Every diagnose_model and localize_divergence call saves its report in the workspace "
      "(stickler-reports/) under the report_id it returns. This returns one: as JSON (the "
      "documented schema), as a self-contained HTML page for people (per-module error chart "
      "against thresholds, the causal culprit, absorbed deviations, blockers with repro "
      "commands), or as JUnit XML for CI; without id, the most recent. Format list gives the "
      "saved reports, newest first, with their status.";
  json schema = {{"type", "object"}, {"additionalProperties", false}};
  schema["properties"]["id"] = {
      {"type", "string"},
      {"description",
       "A report_id from diagnose_model or localize_divergence (default: the "
       "most recent report)."}};
  schema["properties"]["format"] = {
      {"type", "string"},
      {"enum", {"json", "html", "junit", "list"}},
      {"default", "json"},
      {"description", "json, html, junit, or list (every saved report)."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"id", {{"type", "string"}}},
                               {"format", {{"type", "string"}}},
                               {"report", {{"type", "object"}}},
                               {"text", {{"type", "string"}}},
                               {"reports", {{"type", "array"}}}}},
                             {"required", {"format"}}};
  operation.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  operation.cli = {"report", {"id"}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
