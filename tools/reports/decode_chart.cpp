#include "tools/reports/decode_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "tools/reports/html_page.h"

namespace stickler {

using nlohmann::json;

const char* const kDecodeChartStyle = R"(
svg .step-pass{fill:#7a9cc6}svg .step-fail{fill:#c62828}svg .step-marked{stroke:#1d232b;stroke-width:2;fill:none}
svg .agree{fill:#2e7d32}svg .disagree{fill:#c62828;font-weight:bold}
)";

namespace {

// The step's lowest key or value cosine over every layer, as the decode's documents give it.
std::optional<double> lowestCosine(const json& step) {
  const json& value = step.value("min_kv_cosine", json());
  return value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt;
}

std::string cosineText(const std::optional<double>& cosine) {
  if (!cosine) return "no cache compared";
  char text[48];
  std::snprintf(text, sizeof text, "lowest KV cosine %.6f", *cosine);
  return text;
}

}  // namespace

std::string decodeStepChart(const json& per_step, const std::string& id, int64_t marked) {
  if (!per_step.is_array() || per_step.empty()) return "";
  // From 1e-8 (the cache agrees to fp32's precision) to 1 (orthogonal): decades of 1 - cosine.
  constexpr int kLowDecade = -8;
  const double left = 60, column = 56, top = 14, plot = 120;
  const double width = left + column * static_cast<double>(per_step.size()) + 10;
  const double height = top + plot + 44;
  auto y = [&](double distance) {
    const double decades = std::log10(std::max(distance, std::pow(10.0, kLowDecade))) - kLowDecade;
    return top + plot - plot * std::min(1.0, decades / -kLowDecade);
  };
  char buffer[320];
  std::string svg = "<svg id=\"" + escapeMarkup(id) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(static_cast<int>(width)) + "\" height=\"" +
                    std::to_string(static_cast<int>(height)) +
                    "\" role=\"img\" aria-label=\"per decode step: one minus the KV cache's "
                    "lowest cosine, and whether the greedy token agrees\">\n";
  for (int decade = kLowDecade; decade <= 0; decade += 2) {
    const double at = y(std::pow(10.0, decade));
    std::snprintf(buffer, sizeof buffer,
                  "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n",
                  left - 4, at, width - 6, at, left - 8, at + 4, decade);
    svg += buffer;
  }
  for (size_t i = 0; i < per_step.size(); ++i) {
    const json& step = per_step[i];
    const int64_t number = step.value("step", static_cast<int64_t>(i));
    const bool passed = step.value("verdict", "") == "pass";
    const bool agrees = step.value("token_agrees", false);
    const std::optional<double> cosine = lowestCosine(step);
    const double x = left + column * static_cast<double>(i) + 8;
    const double bar_top = cosine ? y(1.0 - *cosine) : top + plot;
    const std::string label = number == 0 ? "prefill" : "step " + std::to_string(number);
    svg += "<g class=\"decode-step\" data-step=\"" + std::to_string(number) + "\" data-verdict=\"" +
           (passed ? "pass" : "fail") + "\"><title>" + escapeMarkup(label) + ": " +
           (passed ? "pass" : "fail") + ", greedy token " + (agrees ? "agrees" : "differs") + ", " +
           cosineText(cosine) + "</title>";
    std::snprintf(buffer, sizeof buffer,
                  "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>",
                  passed ? "step-pass" : "step-fail", x, bar_top, column - 16,
                  std::max(1.0, top + plot - bar_top));
    svg += buffer;
    if (number == marked) {
      std::snprintf(buffer, sizeof buffer,
                    "<rect class=\"step-marked\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\"/>",
                    x - 4, top - 4, column - 8, plot + 8);
      svg += buffer;
    }
    std::snprintf(buffer, sizeof buffer,
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>"
                  "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                  x + (column - 16) / 2, top + plot + 16, label.c_str(),
                  agrees ? "agree" : "disagree", x + (column - 16) / 2, top + plot + 32,
                  agrees ? "token =" : "token ≠");
    svg += buffer;
    svg += "</g>\n";
  }
  return svg + "</svg>\n";
}

std::string decodeChartLegend() {
  return "<p class=\"legend\"><span><i class=\"swatch\" style=\"background:#7a9cc6\"></i>step "
         "passes</span><span><i class=\"swatch\" style=\"background:#c62828\"></i>step "
         "fails</span><span>bar height: 1 &minus; the KV cache's lowest cosine over the layers "
         "(log scale)</span><span>token =/&ne;: the device's greedy token against the "
         "reference's</span></p>\n";
}

}  // namespace stickler
