#include "tools/reports/report_text.h"

#include <cstdio>

namespace stickler {

using nlohmann::json;

std::string metricText(const json& value) {
  if (!value.is_number()) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value.get<double>());
  return text;
}

std::string headlineText(const json& report) {
  return report["model"]["name"].get<std::string>() + " on " +
         report["backend"].get<std::string>() + ": " + report["status"].get<std::string>() + "\n" +
         report["summary"].get<std::string>() + "\n";
}

std::string deviationLines(const json& onsets) {
  std::string text;
  for (const auto& module : onsets) {
    text += "  " + module["module"].get<std::string>() + " (" +
            module["module_class"].get<std::string>() + "): relative L2 " +
            metricText(module["rel_l2"]) + ", threshold " + metricText(module["threshold"]) + ", " +
            metricText(module["ratio_to_emulated"]) + "x the emulated format's; " +
            std::to_string(module["downstream_over_threshold"].get<int64_t>()) +
            " module(s) after it carry it\n";
  }
  return text;
}

}  // namespace stickler
