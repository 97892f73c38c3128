#pragma once

#include <memory>

#include <torch/script.h>

namespace stickler {

// The floating dtypes a float64 run widens: float32, and the 16-bit formats checkpoints are
// served in (bfloat16, float16).
bool widensToFloat64(c10::ScalarType type);

// The graph with every float32, bfloat16 and float16 it names made float64: dtype arguments that
// say one of them, and tensor constants of them (their float64 twins where they have one). Scopes
// (module paths) are kept. With `widen_constants` false, constants without a twin stay as they
// are, for a caller that widens them as they are read (WidenAsRead) rather than holding a float64
// copy of every weight.
std::shared_ptr<torch::jit::Graph> toFloat64Graph(const torch::jit::Graph& graph,
                                                  bool widen_constants = true);

// Gives a float32 tensor constant the float64 value it stands for: a table an adapter computed
// once in float32 (precomputed rotary tables) would otherwise enter a float64 run rounded to
// float32, and the adapted model would differ from the original by float32 rounding there. The
// twin is an attribute of the node, so it travels with copies of the graph.
void attachFloat64Twin(torch::jit::Node& constant, const at::Tensor& twin);
bool hasFloat64Twin(const torch::jit::Node& constant);
at::Tensor float64TwinOf(const torch::jit::Node& constant);  // hasFloat64Twin must hold

// A copy of `module` whose floating parameters and buffers are float64. Integer and boolean
// buffers (a causal mask, token type ids) stay as they are, which Module::to(kDouble) would
// not leave them.
torch::jit::Module toFloat64Module(const torch::jit::Module& module);

// Floating tensors and lists of them converted to float64; anything else as is.
c10::IValue toFloat64Value(const c10::IValue& value);

}  // namespace stickler
