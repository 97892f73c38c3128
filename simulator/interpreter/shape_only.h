#pragma once

// Weightless archives (the sweep's real geometries, tests/zoo/targets.py: every weight is one
// stored zero expanded to its shape) are lowered, never run for their values: what an operator
// computes from such a weight matters only by its shape, dtype and strides, which lowering reads.
// Computing it would make every weight dense (an 8B model's vocabulary projection alone is 2 GB
// in float32) and multiply zeros for seconds per run. So in a program of a weightless archive, an
// operator that reads a weight without storage, or a value computed from one, runs on LibTorch's
// meta device: the result has the shape, dtype and strides the CPU kernel would give it, and no
// data. Values computed from the inputs alone (masks, positions, rotary tables) stay real.

#include <torch/script.h>

namespace stickler {

// A tensor on the meta device (a weight left unread: withWeightsOnMeta), or one of at least
// `kStoragelessElements` elements whose every stride is 0 (a weight written without its values).
inline constexpr int64_t kStoragelessElements = int64_t{1} << 16;
bool isStoragelessWeight(const at::Tensor& tensor);

// The same module for a program that records shapes without reading a weight (loading a model
// for its shapes only, to inspect or lower it): a copy of its object tree, sharing its types
// and everything else, whose floating-point tensors of more than one element are on the meta
// device (integer and boolean buffers, positions and masks, stay real). The weights' pages are
// never touched: an 8B model is checked in seconds.
torch::jit::Module withWeightsOnMeta(const torch::jit::Module& module);

// `value` (a model's outputs: tensors, or tuples, lists and dicts of them) with its
// floating-point tensors on the meta device. A run on shapes computes some of them on the CPU,
// from ones in place of weights (an operator without a meta kernel, as layer_norm and embedding
// are in this LibTorch): those are no values of the model's, and nothing may read them as such.
c10::IValue floatsOnMeta(const c10::IValue& value);

// Whether `node` computes on tensors: an aten operator with a Tensor, Tensor? or Tensor[]
// argument. Container operators (list and tuple construction, indexing, unpacking) are not:
// they pass values on as they are, real or shapes.
bool computesOnTensors(const torch::jit::Node& node);

// Whether an operator's inputs include a meta tensor or a tensor expanded from one element.
bool readsShapesOnly(const std::vector<c10::IValue>& stack);

// Runs `operation` with every tensor of `stack` on the meta device; its tensor results stay
// there. An operator without a meta kernel (one whose result's shape depends on values:
// nonzero, item; and index_select, which LibTorch gives no meta kernel) runs on the CPU
// instead, its meta inputs made ones of their shapes (one element expanded: a weight costs
// nothing unless the operator must write into it or read its elements apart): every
// choice made from values then takes the fullest path (each token routed to every expert, a
// test for any nonzero value true), so that lowering sees every operator the model may run.
void runOnShapes(torch::jit::Operation& operation, std::vector<c10::IValue>& stack);

}  // namespace stickler
