#pragma once

#include <memory>

#include <torch/script.h>

namespace stickler {

// The graph with every float32 it names made float64: dtype arguments that say float32, and
// float32 tensor constants (their float64 twins where they have one). Scopes (module paths) are
// kept. With `widen_constants` false, constants without a twin stay float32, for a caller that
// widens them as they are read (WidenAsRead) rather than holding a float64 copy of every weight.
std::shared_ptr<torch::jit::Graph> toFloat64Graph(const torch::jit::Graph& graph,
                                                  bool widen_constants = true);

// Gives a float32 tensor constant the float64 value it stands for: a table an adapter computed
// once in float32 (precomputed rotary tables) would otherwise enter a float64 run rounded to
// float32, and the adapted model would differ from the original by float32 rounding there. The
// twin is an attribute of the node, so it travels with copies of the graph.
void attachFloat64Twin(torch::jit::Node& constant, const at::Tensor& twin);
bool hasFloat64Twin(const torch::jit::Node& constant);
at::Tensor float64TwinOf(const torch::jit::Node& constant);  // hasFloat64Twin must hold

// Floating tensors and lists of them converted to float64; anything else as is.
c10::IValue toFloat64Value(const c10::IValue& value);

}  // namespace stickler
