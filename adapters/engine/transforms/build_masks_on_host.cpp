// build_masks_on_host: what the model computes from its mask inputs alone (the attention mask
// turned into an additive bias, a causal mask combined with it) runs on the host, in fp32, as
// serving stacks prepare masks before the device graph runs; only the finished mask crosses to
// the device. The graph is unchanged, so the equivalence check is bitwise by construction.
#include <unordered_set>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/static_values.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// "attention_mask.1" -> "attention_mask": TorchScript numbers debug names it has seen before.
std::string inputName(const Value* input) {
  std::string name = input->debugName();
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos &&
      name.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
    name.resize(dot);
  }
  return name;
}

}  // namespace

void buildMasksOnHost(const nlohmann::json& arguments, GraphEdit& edit,
                      const DeviceProfile& /*profile*/) {
  const std::string pattern = arguments.at("input");
  torch::jit::Graph& graph = edit.graph();
  std::unordered_set<const Value*> from_masks;
  std::string names;
  for (size_t i = 1; i < graph.inputs().size(); ++i) {  // 0 is self
    const std::string name = inputName(graph.inputs()[i]);
    names += (names.empty() ? "" : ", ") + name;
    if (globMatch(pattern, name)) from_masks.insert(graph.inputs()[i]);
  }
  if (from_masks.empty()) {
    throw UserError("build_masks_on_host: no input of the model matches '" + pattern +
                    "' (its inputs: " + names + ")");
  }
  // A node belongs to the mask when it reads the mask and nothing else but constants, weights
  // (a causal-mask buffer) and shapes; the first node that also reads activations (scores + mask)
  // is where the mask is used, and it stays on the device.
  StaticValues statics(graph);
  for (const Node* node : allNodes(graph)) {
    bool reads_mask = false;
    bool only_mask = node->blocks().empty() && !node->hasSideEffects();
    for (const Value* input : node->inputs()) {
      if (from_masks.count(input)) {
        reads_mask = true;
      } else if (!statics.isStatic(input)) {
        only_mask = false;
      }
    }
    if (!reads_mask || !only_mask) continue;
    for (const Value* output : node->outputs()) from_masks.insert(output);
    if (!node->kind().is_aten() || placedOnHost(*node)) continue;
    placeOnHost(*const_cast<Node*>(node));
    edit.change().nodes_on_host.push_back({node->kind().toQualString(), modulePathOf(*node)});
    ++edit.change().rewrites;
  }
}

}  // namespace stickler
