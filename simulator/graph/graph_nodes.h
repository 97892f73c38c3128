// Helpers on inlined graphs and the values they carry, shared by loading, the interpreter's
// users and the adapter engine: every node in execution order, what a chain of attribute reads
// resolves to, how values are described and outputs numbered.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/script.h>

#include "simulator/graph/value_desc.h"

namespace stickler {

// What a chain of prim::GetAttr from `self` reads (a weight, a submodule, a constant
// attribute), with `self_value` the module; nullopt when `value` is no such chain.
std::optional<c10::IValue> resolveAttribute(const torch::jit::Value* value,
                                            const torch::jit::Value* self,
                                            const c10::IValue& self_value);

// The dotted path of the chain of prim::GetAttr that reads `value` ("model.layers.0.q_proj.
// weight"); "" when no attribute read produces it.
std::string attributePath(const torch::jit::Value* value);

ValueDesc describeValue(const c10::IValue& value);
std::string dtypeName(c10::ScalarType type);

// The tensors in a value, depth-first through tuples and lists: how outputs are numbered.
std::vector<at::Tensor> flattenTensors(const std::vector<c10::IValue>& values);

// Every node of `graph` in execution order (pre-order through blocks).
std::vector<const torch::jit::Node*> allNodes(const torch::jit::Graph& graph);

}  // namespace stickler
