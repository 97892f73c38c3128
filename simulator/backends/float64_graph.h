#pragma once

#include <memory>

#include <torch/script.h>

namespace stickler {

// The graph with every float32 it names made float64: dtype arguments that say float32, and
// float32 tensor constants. Scopes (module paths) are kept.
std::shared_ptr<torch::jit::Graph> toFloat64Graph(const torch::jit::Graph& graph);

// Floating tensors and lists of them converted to float64; anything else as is.
c10::IValue toFloat64Value(const c10::IValue& value);

}  // namespace stickler
