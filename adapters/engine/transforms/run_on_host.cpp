// run_on_host: the modules stay on the CPU in every device run, as a hybrid placement that
// travels with the adapted model. Nothing in the graph changes, so the equivalence check is
// bitwise by construction; what changes is where the lowering puts the nodes.
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/faults/fault_rule.h"

namespace stickler {

void runOnHost(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile) {
  const std::string pattern = arguments.at("module");
  std::vector<std::string>& host = edit.hostModules();
  for (const ModuleEntry& entry : edit.model().modules.entries()) {
    if (entry.path.empty() || !globMatch(pattern, entry.path)) continue;
    const bool covered = std::any_of(host.begin(), host.end(), [&](const std::string& module) {
      return isWithin(entry.path, module);
    });
    if (covered) continue;  // already on the host, itself or through a parent
    host.push_back(entry.path);
    edit.change().placed_on_host.push_back(entry.path);
    ++edit.change().rewrites;
  }
}

}  // namespace stickler
