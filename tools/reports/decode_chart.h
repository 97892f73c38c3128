// A decode's steps as a chart, for the HTML pages that show one: a localize report made with
// decode (every step of its decode) and a sweep's page (each decoder's steps).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

// One bar per step: how far the KV cache's lowest cosine is from 1 (log scale), coloured by
// the step's verdict, with the greedy token's agreement under it and the step the caller marks
// (`marked`, -1 for none) outlined. `per_step` is a decode's per_step array (its min_kv_cosine,
// verdict and token_agrees), as run_model's decode document and the gate's and a sweep's
// summaries have it. `id` names the svg element.
std::string decodeStepChart(const nlohmann::json& per_step, const std::string& id,
                            int64_t marked = -1);

// The legend under a chart from decodeStepChart.
std::string decodeChartLegend();

// The CSS the chart's classes need (pages append it to their style).
extern const char* const kDecodeChartStyle;

}  // namespace stickler
