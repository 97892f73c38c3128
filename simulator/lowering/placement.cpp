#include "simulator/lowering/placement.h"

#include "simulator/support/errors.h"

namespace stickler {

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

}  // namespace stickler
