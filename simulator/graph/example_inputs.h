#pragma once

#include <cstdint>
#include <vector>

#include <torch/script.h>

#include "simulator/graph/model_card.h"

namespace stickler {

c10::ScalarType toScalarType(DType dtype);

// Deterministic example values for the forward's arguments: one tensor per input spec (the
// same seed gives the same values), then the schema's defaults for arguments left out. Inputs
// of kind captured take `captured[i]` (the archive's stored values) whatever the seed.
std::vector<c10::IValue> makeExampleInputs(const std::vector<InputSpec>& inputs,
                                           const c10::FunctionSchema& forward, uint64_t seed,
                                           const std::vector<at::Tensor>& captured = {});

// One tensor for one input spec, drawing from `generator`.
at::Tensor makeExampleTensor(const InputSpec& input, at::Generator& generator);

}  // namespace stickler
