// Which values of a graph are fixed once the inputs' shapes are: built from constants, weights
// and tensor metadata (sizes, dtype, device), never from the values of an input.
#pragma once

#include <unordered_map>

#include <torch/script.h>

namespace stickler {

class StaticValues {
 public:
  explicit StaticValues(const torch::jit::Graph& graph) : graph_(graph) {}

  bool isStatic(const torch::jit::Value* value);

 private:
  bool decide(const torch::jit::Value* value);

  const torch::jit::Graph& graph_;
  std::unordered_map<const torch::jit::Value*, bool> memo_;
};

}  // namespace stickler
