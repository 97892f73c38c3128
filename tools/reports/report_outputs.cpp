#include "tools/reports/report_outputs.h"

#include <filesystem>

#include "simulator/support/errors.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/text_files.h"
#include "tools/framework/operation.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/html_report.h"
#include "tools/reports/junit_report.h"
#include "tools/reports/report_store.h"

namespace stickler {
using nlohmann::json;

void checkReportOutputs(const json& input, OperationContext& context) {
  for (const char* field : {"html", "junit"}) {
    if (!input.contains(field)) continue;
    const std::filesystem::path path = context.resolvePath(requireString(input, field));
    const std::filesystem::path parent =
        path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec) || std::filesystem::is_directory(path, ec)) {
      throw UserError("cannot write the " + std::string(field) + " report to " + path.string() +
                      (std::filesystem::is_directory(path, ec)
                           ? ": it is a directory"
                           : ": its directory " + parent.string() + " does not exist"));
    }
  }
}

void publishReport(json& report, const json& input, OperationContext& context) {
  const double start = phaseClock();
  const ReportStore store(context.workspaceRoot());
  const std::string id = store.save(report);
  notePhase("saved the report " + id, phaseClock() - start);
  json files = {{"json", *store.pathOf(id)}};
  try {
    if (input.contains("html")) {
      const std::string path = context.resolvePath(requireString(input, "html"));
      writeFileAtomically(path, renderHtmlReport(report));
      files["html"] = path;
    }
    if (input.contains("junit")) {
      const std::string path = context.resolvePath(requireString(input, "junit"));
      writeFileAtomically(path, renderJunitReport(report));
      files["junit"] = path;
    }
  } catch (const UserError& e) {
    throw UserError(std::string(e.what()) + " (the report itself is saved: get_report " + id + ")");
  }
  report["report_id"] = id;
  report["report_files"] = files;
}

std::string reportFilesText(const json& report) {
  if (!report.contains("report_id")) return "";
  const json& files = report["report_files"];
  std::string text = "\nreport " + report["report_id"].get<std::string>() + ": " +
                     files["json"].get<std::string>();
  for (const char* kind : {"html", "junit"}) {
    if (files.contains(kind)) text += ", " + files[kind].get<std::string>();
  }
  return text + "\n";
}

}  // namespace stickler
