#include "simulator/lowering/host_placement.h"

#include <torch/script.h>

#include "simulator/graph/loaded_model.h"

namespace stickler {
namespace {

c10::Symbol hostMark() {
  static const c10::Symbol mark = c10::Symbol::attr("stickler_host");
  return mark;
}

}  // namespace

bool placedOnHost(const torch::jit::Node& node) {
  return node.hasAttribute(hostMark());
}

void placeOnHost(torch::jit::Node& node) {
  node.i_(hostMark(), 1);
}

int64_t countPlacedOnHost(const torch::jit::Graph& graph) {
  int64_t count = 0;
  for (const torch::jit::Node* node : allNodes(graph)) count += placedOnHost(*node);
  return count;
}

}  // namespace stickler
