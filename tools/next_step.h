// What to call after a localize or diagnose report, in the words of both front-ends
// ("localize_divergence (`stickler localize`)"), taken from the operation table. The simulator
// says what it found; only the tools layer knows the tools.
#pragma once

#include <nlohmann/json.hpp>

namespace stickler {

// Appends the next step to the report's summary, when its status calls for one.
void addNextStep(nlohmann::json& report);

}  // namespace stickler
