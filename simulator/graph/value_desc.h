// Plain descriptions of graph values and source positions, free of LibTorch so that results
// carrying them (compile reports, run failures) cross into the tools layer as data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stickler {

// The type and, for tensors, the shape and dtype of one value seen in a run.
struct ValueDesc {
  std::string kind;  // "Tensor", "int", "float", "bool", "None", "list", "tuple", ...
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // tensors: memory layout, which decides the stick dimension
  std::string dtype;
  std::string value;  // scalars only, e.g. "-1"
};

struct SourceLine {
  std::string file;
  int64_t line = 0;
};

}  // namespace stickler
