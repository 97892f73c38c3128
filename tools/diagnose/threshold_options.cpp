#include "tools/diagnose/threshold_options.h"

#include "simulator/support/errors.h"
#include "tools/framework/operation_table.h"

namespace stickler {

void addThresholdFields(nlohmann::json& properties) {
  properties["threshold_margin"] = {
      {"type", "number"},
      {"default", 4},
      {"description",
       "A module deviates when its error exceeds this many times the error of the device's "
       "number format emulated on the CPU (at threshold_percentile over the input sets)."}};
  properties["threshold_percentile"] = {
      {"type", "number"},
      {"default", 0.99},
      {"description", "Which percentile of the emulated error over the input sets (0-1]."}};
  properties["threshold_input_sets"] = {
      {"type", "integer"},
      {"default", 3},
      {"description",
       "Input sets the thresholds are derived from: the example inputs and "
       "fresh draws from the model card (1-32)."}};
}

ThresholdSettings thresholdSettings(const nlohmann::json& input) {
  ThresholdSettings settings;
  settings.margin = optionalNumber(input, "threshold_margin", settings.margin);
  settings.percentile = optionalNumber(input, "threshold_percentile", settings.percentile);
  settings.inputs =
      static_cast<int>(optionalNumber(input, "threshold_input_sets", settings.inputs));
  if (!(settings.margin > 0) || !(settings.percentile > 0) || settings.percentile > 1 ||
      settings.inputs < 1 || settings.inputs > 32) {
    throw UserError(
        "threshold_margin must be positive, threshold_percentile in (0, 1] and "
        "threshold_input_sets from 1 to 32");
  }
  return settings;
}

}  // namespace stickler
