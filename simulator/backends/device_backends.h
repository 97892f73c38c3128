#pragma once

#include <memory>

#include "simulator/backends/backend.h"

namespace stickler {

// cpu-emulated:<dtype>: every operator's values rounded to the format, in process.
std::unique_ptr<Backend> makeEmulatedBackend(const BackendSpec& spec);

// spyre-sim:<profile>: the profile's lowering, numerics and faults; runs in a worker process.
std::unique_ptr<Backend> makeSpyreSimBackend(const BackendSpec& spec);

}  // namespace stickler
