// How names in adapter code resolve when LibTorch compiles it: what LibTorch's own C++ resolver
// knows (`torch.<op>` as aten operators), and besides what agents copy from Python and from
// exported graphs: dtypes written `torch.float32`, operators written `torch.ops.aten.topk` or
// with their overload, `torch.ops.aten.mul.Tensor`.
#pragma once

#include <memory>
#include <string>

#include <torch/csrc/jit/api/compilation_unit.h>

namespace stickler {

// Compiles `source` (functions only) with the adapter resolver.
std::shared_ptr<torch::jit::CompilationUnit> compileAdapterSource(const std::string& source);

}  // namespace stickler
