// The settings of per-module thresholds, shared by localize_divergence and diagnose_model's
// numerics mode: their schema properties, described once, and how an input sets them.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/diagnose/module_thresholds.h"

namespace stickler {

// Adds threshold_margin, threshold_percentile and threshold_input_sets to `properties`.
void addThresholdFields(nlohmann::json& properties);

// The settings an input asks for; throws UserError for values out of range.
ThresholdSettings thresholdSettings(const nlohmann::json& input);

}  // namespace stickler
