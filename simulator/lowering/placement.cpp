#include "simulator/lowering/placement.h"

#include <torch/script.h>

#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

c10::Symbol hostMark() {
  static const c10::Symbol mark = c10::Symbol::attr("stickler_host");
  return mark;
}

}  // namespace

Placement makePlacement(const ModuleTable& modules, const std::vector<std::string>& device_modules,
                        const std::string& model_path,
                        const std::vector<std::string>& host_modules) {
  for (const auto& module : device_modules) {
    if (modules.find(module) == nullptr) {
      throw UserError("no module '" + module + "' in " + model_path);
    }
  }
  return Placement{device_modules, host_modules};
}

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
