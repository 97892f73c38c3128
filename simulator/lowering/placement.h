#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "simulator/graph/module_table.h"

namespace stickler {

// Which modules run on the device; the rest runs on the CPU reference in the same run.
// An empty list places the whole model on the device. Host modules (placed there by an
// adapter's run_on_host) stay on the CPU whatever the device modules say.
struct Placement {
  std::vector<std::string> device_modules;
  std::vector<std::string> host_modules;
  // Localization's units: device_modules then name the modules whose own nodes run on the
  // device ("" for the root's), children not included, and an empty list places nothing there.
  bool own_nodes_only = false;
  // Operator-level localization, with own_nodes_only: single nodes on the device besides the
  // modules', by their position in the graph's execution order (allNodes), ascending.
  std::vector<int64_t> device_nodes;

  bool wholeModel() const { return !own_nodes_only && device_modules.empty(); }
  // Whether the node at `position` of module `module_path` runs on the device.
  bool nodeOnDevice(const std::string& module_path, int64_t position) const {
    if (onDevice(module_path)) return true;
    if (!own_nodes_only || !std::binary_search(device_nodes.begin(), device_nodes.end(), position))
      return false;
    for (const auto& module : host_modules) {
      if (isWithin(module_path, module)) return false;
    }
    return true;
  }
  bool onDevice(const std::string& module_path) const {
    for (const auto& module : host_modules) {
      if (isWithin(module_path, module)) return false;
    }
    if (own_nodes_only) {
      return std::find(device_modules.begin(), device_modules.end(), module_path) !=
             device_modules.end();
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

}  // namespace stickler
