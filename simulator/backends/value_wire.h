// The values a device run sends to its model host and back (inputs, outputs), as bytes.
// Tensors, and tuples and lists of them, are written raw (dtype, sizes, contiguous bytes): a
// localization sends a dozen runs' values, and LibTorch's pickler cost a small model's run a
// tenth of its time. Any other value goes through the pickler whole.
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

std::string encodeValues(const std::vector<c10::IValue>& values);

// Throws std::runtime_error on bytes that are not a whole encoding.
std::vector<c10::IValue> decodeValues(const std::string& bytes);

}  // namespace stickler
