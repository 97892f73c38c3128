#pragma once

#include <memory>

#include "simulator/backends/backend.h"

namespace stickler {

// cpu-emulated:<dtype>: every operator's values rounded to the format, in process.
std::unique_ptr<Backend> makeEmulatedBackend(const BackendSpec& spec);

// spyre-sim:<profile>: the profile's lowering, numerics and faults; runs in the model's host
// (a process of its own, which a runtime abort ends).
std::unique_ptr<Backend> makeSpyreSimBackend(const BackendSpec& spec);

}  // namespace stickler
