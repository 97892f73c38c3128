#pragma once

// How 16-bit models are computed on the CPU. LibTorch 1.13 has no CPU kernels for most float16
// operators (addmm, layer_norm, softmax, ...), and its bfloat16 kernels round every result to
// bfloat16. The reference Stickler judges a device against is float32 arithmetic: so a model whose
// weights are bfloat16 or float16 is computed in float32 from its 16-bit weights, each operator
// widening what it reads as it reads it. The weights stay 16-bit in memory; no float32 copy of the
// model is ever held (docs/simulator-assumptions.md, "16-bit models").

#include <torch/script.h>

#include "simulator/interpreter/widening_buffers.h"

namespace stickler {

bool isSixteenBitFloat(c10::ScalarType type);

// A 16-bit floating tensor (or list of tensors) as float32; anything else as it is.
c10::IValue widenSixteenBit(const c10::IValue& value);

// What the interpreter does with one input of an operator in a program that computes 16-bit
// values in float32.
enum class InputWidening : uint8_t {
  kKeep,    // as it is: not an operator's arithmetic, or a tensor the operator writes into
  kTensor,  // a 16-bit tensor (or list of them) is read as float32
  kDtype,   // a dtype argument naming bfloat16 or float16 names float32
};

// Per input of `node`; empty when nothing is widened (operators that only move or select data,
// such as embedding, slice or view, run on the 16-bit values themselves, so that a gather from
// a large table does not widen the whole table).
std::vector<InputWidening> wideningFor(const torch::jit::Node& node);

// aten::linear reading a 16-bit weight of more than this many elements is computed a slice of
// output features at a time, each slice of the weight widened on its own: a float32 copy of a
// vocabulary projection (32000 x 4096: 500 MB, 2 GB at Llama-3's 128256) is never held whole.
inline constexpr int64_t kLinearSliceElements = int64_t{1} << 22;
// The rows (output features) of such a slice, for a weight of `in_features` columns.
inline int64_t linearSliceRows(int64_t in_features) {
  return in_features > 0 && in_features < kLinearSliceElements ? kLinearSliceElements / in_features
                                                               : 1;
}

// Whether `node` is such a linear (decided per run, by the weight's dtype and size).
bool mayRunLinearInSlices(const torch::jit::Node& node);

// Runs the linear on `stack` (input, weight, bias) in slices when its weight is 16-bit and larger
// than kLinearSliceElements, each slice widened into `buffers`; returns false, changing nothing,
// otherwise.
bool runLinearInSlices(std::vector<c10::IValue>& stack, WideningBuffers& buffers);

// Applies `widening` to an operator's inputs on `stack`, the tensors into `buffers` (float32).
void widenInputs(const std::vector<InputWidening>& widening, std::vector<c10::IValue>& stack,
                 WideningBuffers& buffers);

}  // namespace stickler
