#pragma once

#include <memory>

#include "simulator/backends/backend.h"

namespace stickler {

// cpu (fp32) or cpu64 (float64: parameters, inputs and the graph's float32 dtypes widened).
std::unique_ptr<Backend> makeCpuBackend(const BackendSpec& spec);

}  // namespace stickler
