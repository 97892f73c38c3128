// Weights an adapter makes (padded heads, rows filling sticks), held once in a process however
// many graphs it adapts.
//
// adapt --decode applies the forward's adapters to its prefill and decode-step graphs too: each
// graph's padded q/k/v/o weights were copies of their own, equal to the forward's (at 480M, a
// third of the archive's weight bytes again for each graph). Interned, an equal tensor still
// alive in the process is put in the graph instead of the new one. A new one is kept in a sealed
// memory file, which the process passes to its model hosts with the model's recipe, and a model
// host takes the file its caller passed for it instead (shared_weight_files.h): one copy for both.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

namespace stickler {

// A constant node for `tensor` inserted at `graph`'s insert point: a tensor of at least 64 KiB
// equal to one alive in this process (same dtype, shape and bytes) is shared with it.
torch::jit::Value* insertSharedConstant(torch::jit::Graph& graph, const at::Tensor& tensor);

// The tensor itself, or the equal one alive already (as above): for constants built elsewhere.
at::Tensor sharedTensor(const at::Tensor& tensor);

}  // namespace stickler
