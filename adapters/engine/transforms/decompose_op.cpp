// decompose_op: every node of one operator in the matching modules becomes the few simpler
// operators it is made of (layer_norm as means, a product and rsqrt). For an operator the
// profile cannot lower, or one whose fused kernel misbehaves; the sums are reordered, so an
// adapter states how many ULPs the decomposition may move the outputs.
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/decompositions.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {

void decomposeOp(const nlohmann::json& arguments, GraphEdit& edit,
                 const DeviceProfile& /*profile*/) {
  const std::string op = arguments.at("op");
  const std::string pattern = arguments.at("module");
  const std::vector<std::string> known = decomposableOps();
  if (std::find(known.begin(), known.end(), op) == known.end()) {
    std::string names;
    for (const auto& name : known) names += (names.empty() ? "" : ", ") + name;
    throw UserError("decompose_op: no decomposition for " + op + " (decomposable: " + names + ")");
  }
  std::vector<torch::jit::Node*> nodes;
  for (const torch::jit::Node* node : allNodes(edit.graph())) {
    if (node->kind().toQualString() == op && globMatch(pattern, modulePathOf(*node))) {
      nodes.push_back(const_cast<torch::jit::Node*>(node));
    }
  }
  torch::NoGradGuard no_grad;
  for (torch::jit::Node* node : nodes) {
    decompose(edit, node);
    ++edit.change().rewrites;
  }
}

}  // namespace stickler
