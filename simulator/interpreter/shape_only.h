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

// A tensor of at least `kStoragelessElements` elements whose every stride is 0: a weight
// written without its values.
inline constexpr int64_t kStoragelessElements = int64_t{1} << 16;
bool isStoragelessWeight(const at::Tensor& tensor);

// Whether `node` computes on tensors: an aten operator with a Tensor, Tensor? or Tensor[]
// argument. Container operators (list and tuple construction, indexing, unpacking) are not:
// they pass values on as they are, real or shapes.
bool computesOnTensors(const torch::jit::Node& node);

// Whether an operator's inputs include a meta tensor or a tensor expanded from one element.
bool readsShapesOnly(const std::vector<c10::IValue>& stack);

// Runs `operation` with every tensor of `stack` on the meta device; its tensor results stay
// there. An operator without a meta kernel runs on the CPU instead, its meta inputs made zeros
// of their shapes (values of a weightless archive are zeros anyway).
void runOnShapes(torch::jit::Operation& operation, std::vector<c10::IValue>& stack);

}  // namespace stickler
