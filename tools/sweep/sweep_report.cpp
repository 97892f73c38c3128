// coverage_report: the sweeps' history read back for agents and people: the latest sweep's
// coverage, the trend across sweeps, the blocker ranking and what changed since the sweep
// before (docs/sweeps.md).
#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"
#include "tools/framework/operation_table.h"
#include "tools/sweep/sweep_history.h"
#include "tools/sweep/sweep_page.h"
#include "tools/sweep/sweep_summary.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string path = SweepHistory::pathFor(context.workspaceRoot());
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw UserError("no sweep in this workspace yet (run `stickler sweep` or run_sweep)");
  }
  SweepHistory history(path);
  const std::string profile = input.value("profile", "");
  std::optional<json> sweep =
      input.contains("sweep") ? history.load(input["sweep"]) : history.latest(profile);
  if (!sweep) {
    throw UserError(input.contains("sweep")
                        ? "no sweep '" + input["sweep"].get<std::string>() + "' in history"
                        : "no sweep on profile '" + profile + "' in history");
  }
  const std::vector<SweepPoint> points = history.points((*sweep)["profile"]);
  json trend = json::array();
  for (const SweepPoint& point : points) {
    trend.push_back({{"id", point.id},
                     {"finished", point.finished},
                     {"models", point.models},
                     {"covered", point.covered},
                     {"passing", point.passing}});
  }
  json report = {{"schema", "stickler.coverage"},    {"version", 1},
                 {"sweep", (*sweep)["id"]},          {"profile", (*sweep)["profile"]},
                 {"finished", (*sweep)["finished"]}, {"catalog", (*sweep)["catalog"]},
                 {"summary", (*sweep)["summary"]},   {"trend", trend}};
  if (sweep->contains("diff")) report["diff"] = (*sweep)["diff"];
  if (input.contains("category")) {
    const std::string wanted = input["category"];
    const size_t limit = context.listLimit();
    json models = json::array();
    size_t matched = 0;
    for (const json& entry : (*sweep)["models"]) {
      if (categoryKind(entry.value("category", "")) != categoryKind(wanted) &&
          entry.value("category", "") != wanted) {
        continue;
      }
      if (limit == 0 || models.size() < limit) models.push_back(entry);
      ++matched;
    }
    report["models"] = models;
    report["models_matched"] = matched;
  }
  if (input.contains("html")) {
    const std::string html = context.resolvePath(input["html"]);
    writeFileAtomically(html, renderSweepHtml(*sweep, points));
    report["html"] = html;
  }
  return report;
}

std::string render(const json& report) {
  const json& summary = report["summary"];
  std::string text = report["sweep"].get<std::string>() + " on " +
                     report["profile"].get<std::string>() + ", finished " +
                     report["finished"].get<std::string>() + ": " + summary["models"].dump() +
                     " models, " + summary["covered"].dump() + " compile with adapters, " +
                     summary["passing"].dump() + " pass\ntrend (oldest first):";
  for (const json& point : report["trend"]) {
    text += " " + point["covered"].dump() + "/" + point["passing"].dump();
  }
  text += "\n";
  for (const json& blocker : summary["blockers"]) {
    text += "  " + blocker["blocker"].get<std::string>() + ": " + blocker["models"].dump() +
            " model(s)\n";
  }
  if (report.contains("models")) {
    for (const json& entry : report["models"]) {
      text += entry.value("name", entry.value("model", "")) + ": " + entry.value("category", "") +
              " " + entry.value("detail", "") + "\n";
    }
  }
  if (report.contains("html")) text += "written " + report["html"].get<std::string>() + "\n";
  return text;
}

}  // namespace

Operation makeCoverageReportOperation() {
  Operation operation;
  operation.name = "coverage_report";
  operation.title = "Coverage from the sweeps' history";
  operation.description =
      "Read the workspace's sweep history: the latest sweep (or one by id) with how many models "
      "compile with the adapters they have and pass end to end, per family and per category, "
      "the blockers that block the most models, what broke or was fixed since the sweep "
      "before and why, and the trend across sweeps. `category` lists the models of one "
      "category (e.g. \"no adapter\", \"unsupported op aten::topk\"). Reads only.";
  json schema = {{"type", "object"}, {"additionalProperties", false}};
  schema["properties"]["sweep"] = {{"type", "string"},
                                   {"description", "A sweep's id; the latest when absent."}};
  schema["properties"]["profile"] = {
      {"type", "string"},
      {"description", "The latest sweep on this profile (a name as sweeps record it)."}};
  schema["properties"]["category"] = {
      {"type", "string"},
      {"description", "List the sweep's models of this category or category kind."}};
  schema["properties"]["html"] = {
      {"type", "string"},
      {"description", "Also write the sweep's HTML page (coverage chart, diff) to this path."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"schema", {{"const", "stickler.coverage"}}},
                               {"summary", {{"type", "object"}}},
                               {"trend", {{"type", "array"}}}}},
                             {"required", {"schema", "summary", "trend"}}};
  operation.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  operation.cli = {"sweep report", {}, {}};
  operation.run = run;
  operation.render_text = render;
  return operation;
}

}  // namespace stickler
