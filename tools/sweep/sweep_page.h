// A sweep for people and for CI: one self-contained HTML page (coverage over time as a chart,
// per-family table, blocker ranking, the diff against the previous sweep, every model), and
// JUnit XML with one test case per model.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/sweep/sweep_history.h"

namespace stickler {

// `points`: the history's sweeps on the same profile, oldest first (the chart's line).
std::string renderSweepHtml(const nlohmann::json& sweep, const std::vector<SweepPoint>& points);

// A test case per model: it passes when the model does what it was asked (passes end to end,
// or compiles when only lowered); a failure's type is its category.
std::string renderSweepJunit(const nlohmann::json& sweep);

}  // namespace stickler
