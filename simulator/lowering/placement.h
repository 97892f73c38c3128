#pragma once

#include <algorithm>
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

  bool wholeModel() const { return !own_nodes_only && device_modules.empty(); }
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
