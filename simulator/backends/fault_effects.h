#pragma once

#include <vector>

#include <torch/script.h>

#include "simulator/faults/fault_rule.h"

namespace stickler {

// Applies a numerical fault to a node's output, given the inputs its kernel saw. Returns the
// corrupted output. (compile_error and runtime_abort are not numerical: the lowering and the
// device execution handle them.)
at::Tensor applyFault(const FaultEffect& effect, const torch::jit::Node& node,
                      const std::vector<c10::IValue>& kernel_inputs, const at::Tensor& output,
                      int64_t stick_elements);

// Sum over the last dimension as a device accumulating in `format` would: `chunk` values at a
// time in fp32, each partial sum and every running total rounded to `format`.
at::Tensor narrowSumLastDim(const at::Tensor& values, NumberFormat format, int64_t chunk);

}  // namespace stickler
