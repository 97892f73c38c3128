// Where the diagnosis tools put repro bundles and what they call them, and the numerical
// failure's bundle of a localization or of diagnose's numerics mode (docs/localize-json.md,
// "The reproducer").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "simulator/diagnose/localization_result.h"

namespace stickler {

class OperationContext;
struct LoadedModel;
struct DeviceProfile;

// "03-weight-stick-alignment-linear-lm_head": a bundle's directory name.
std::string bundleName(size_t index, const std::string& rule, const std::string& op,
                       const std::string& module);

// The input's bundle_dir, or stickler-repros/<model name> in the workspace (made).
std::string bundleDirectory(const nlohmann::json& input, const LoadedModel& model,
                            OperationContext& context);

// The bundle of what `result` blames: localization's culprit operator when it is one, else its
// culprit module; the numerics' first deviation onset. Null when there is none (the model
// passes, or the cause is a set of modules); {"error": ...} when it could not be written.
nlohmann::json numericsRepro(const LoadedModel& model, const LocalizationResult& result,
                             const DeviceProfile& profile, const nlohmann::json& input,
                             OperationContext& context);

// The bundle's lines for the text reports: its command, what it showed, its clean control.
std::string numericsReproText(const nlohmann::json& repro);

}  // namespace stickler
