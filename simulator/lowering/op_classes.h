#pragma once

#include <string>

namespace stickler {

// What kind of kernel an aten operator is, for layout rules, fusion and device numerics.
enum class OpClass {
  kMatmul,     // contracts over a dimension: linear, addmm, mm, bmm, matmul, convolution
  kPointwise,  // elementwise, with broadcasting (unary or binary)
  kReduction,  // reduces or normalizes over a dimension: softmax, layer_norm, sum, mean...
  kView,       // changes how memory is read, not the values: view, permute, slice...
  kOther,      // everything else: embedding, cat, creation, scatter, index ops...
};

OpClass opClassOf(const std::string& op);

// Pointwise operators that read two or more tensors, whose operands must share a stick dim.
bool isBinaryPointwise(const std::string& op);

}  // namespace stickler
