#pragma once

#include <string>
#include <vector>

#include "simulator/graph/module_table.h"

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace stickler {

// Which modules run on the device; the rest runs on the CPU reference in the same run.
// An empty list places the whole model on the device. Host modules (placed there by an
// adapter's run_on_host) stay on the CPU whatever the device modules say.
struct Placement {
  std::vector<std::string> device_modules;
  std::vector<std::string> host_modules;

  bool wholeModel() const { return device_modules.empty(); }
  bool onDevice(const std::string& module_path) const {
    for (const auto& module : host_modules) {
      if (isWithin(module_path, module)) return false;
    }
    if (device_modules.empty()) return true;
    for (const auto& module : device_modules) {
      if (isWithin(module_path, module)) return true;
    }
    return false;
  }
};

// The placement of `device_modules` in a model: each must be a module of it (UserError naming
// the model otherwise).
Placement makePlacement(const ModuleTable& modules, const std::vector<std::string>& device_modules,
                        const std::string& model_path,
                        const std::vector<std::string>& host_modules = {});

// Single nodes an adapter placed on the host (build_masks_on_host): they run on the CPU in
// every device run, whatever the placement says. The mark is an attribute of the node, so it
// travels with copies of the graph and leaves with a node a later rewrite replaces.
bool placedOnHost(const torch::jit::Node& node);
void placeOnHost(torch::jit::Node& node);
int64_t countPlacedOnHost(const torch::jit::Graph& graph);

}  // namespace stickler
