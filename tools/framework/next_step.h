// What to call after a localization or lockstep diagnosis, in the words of both front-ends
// ("localize_divergence (`stickler localize`)"), taken from the operation table. The simulator
// says what it found; only the tools layer knows the tools.
#pragma once

#include <string>

#include "simulator/diagnose/localization_result.h"

namespace stickler {

// The words to append to the result's summary ("" when its status needs no next step).
std::string nextStepFor(const LocalizationResult& result);

}  // namespace stickler
