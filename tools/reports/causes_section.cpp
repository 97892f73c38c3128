#include "tools/reports/causes_section.h"

#include "tools/reports/html_page.h"
#include "tools/reports/report_outcome.h"

namespace stickler {

using nlohmann::json;

std::string causesSection(const json& report) {
  if (!report.contains("causes") || !report["causes"].is_array()) return "";
  std::string section = "<section id=\"causes\">\n<h2>Causes, in the order found</h2>\n";
  if (!report["causes"].empty()) {
    section +=
        "<table>\n<tr><th>#</th><th>modules</th><th>alone on the device</th><th>without each "
        "member</th><th>everything else on the device</th><th>confirmed</th><th>runs</th></tr>\n";
  }
  size_t index = 0;
  for (const auto& cause : report["causes"]) {
    if (!cause.is_object()) continue;
    const json confirmation = cause.value("confirmation", json::object());
    std::string modules, without;
    for (const auto& module : cause.value("modules", json::array()))
      modules += "<code>" + escapeMarkup(stringField(module, "module")) + "</code> ";
    for (const auto& entry : confirmation.value("without_each", json::array())) {
      without += "<code>" + escapeMarkup(stringField(entry, "module")) +
                 "</code>: " + escapeMarkup(stringField(entry, "verdict")) + "<br>";
    }
    const int64_t first = cause.value("first_run", int64_t{0});
    const int64_t runs = cause.value("runs", int64_t{0});
    const std::string number = std::to_string(++index);
    section += "<tr class=\"cause-row\" data-cause=\"" + number + "\"><td class=\"num\">" + number +
               "</td><td>" + modules + "</td><td>" +
               escapeMarkup(stringField(confirmation, "alone_on_device")) + "</td><td>" +
               (without.empty() ? "&mdash;" : without) + "</td><td>" +
               escapeMarkup(stringField(confirmation, "everything_else_on_device")) + "</td><td>" +
               (confirmation.value("confirmed", false) ? "yes" : "<b>no</b>") +
               "</td><td class=\"num\">" + std::to_string(runs) +
               (runs > 0 ? " (runs " + std::to_string(first) + "&ndash;" +
                               std::to_string(first + runs - 1) + ")"
                         : std::string()) +
               "</td></tr>\n";
  }
  if (!report["causes"].empty()) section += "</table>\n";
  if (report.contains("budget") && report["budget"].is_object()) {
    const json& budget = report["budget"];
    section += "<p id=\"run-budget\">Run budget: " + integerField(budget, "runs") + " of " +
               integerField(budget, "max_runs") + " device runs" +
               (budget.value("default", true) ? " (the default)" : "") +
               (report.value("all_causes", false) ? ", every cause searched" : "") + ".";
    if (budget.value("exhausted", false) && budget.contains("undecided")) {
      section += " <b>Spent before the search ended</b>; undecided: " +
                 escapeMarkup(stringField(budget["undecided"], "reason"));
      for (const auto& module : budget["undecided"].value("modules", json::array())) {
        if (module.is_string())
          section += " <code>" + escapeMarkup(module.get<std::string>()) + "</code>";
      }
    }
    section += "</p>\n";
  }
  return section + "</section>\n";
}

}  // namespace stickler
