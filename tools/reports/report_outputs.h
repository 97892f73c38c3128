// What diagnose and localize do with a finished report: keep it in the workspace's report
// store (so get_report and the stickler://reports resources can serve it later) and write the
// HTML page and JUnit XML where the caller asked.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

class OperationContext;

// Checks, before the work starts, that the html and junit paths the input names may be written.
void checkReportOutputs(const nlohmann::json& input, OperationContext& context);

// Saves `report`, then adds `report_id` and `report_files` (json, and html / junit when the
// input names them) to it.
void publishReport(nlohmann::json& report, const nlohmann::json& input, OperationContext& context);

// "report: <id>" and where its files went, for the text a command prints.
std::string reportFilesText(const nlohmann::json& report);

}  // namespace stickler
