#pragma once

#include <torch/script.h>

namespace stickler {

// Operations for the TorchScript nodes that have no operator schema (tuples, lists, dicts,
// objects). LibTorch has them in vararg_functions.h but does not export them from its
// shared library, so the interpreter carries its own, with the same semantics.
torch::jit::Operation containerOperation(const torch::jit::Node& node);

}  // namespace stickler
