// The stickler.localize document (docs/localize-json.md) and diagnose's numerics mode
// (docs/diagnose-json.md) of a localization result, with their one-sentence summaries and the
// next step.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/diagnose/localization_result.h"

namespace stickler {

nlohmann::json localizeReport(const LocalizationResult& result);

}  // namespace stickler
