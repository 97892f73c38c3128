// restickify: a pointwise operator whose operands are sticked on different dimensions (a value
// permuted to channels-last added back to its channels-first residual, T5's permuted position
// bias added to the scores) gets an explicit copy of the permuted operand into row-major order,
// the re-stickify the device compiler does not insert itself (torch-spyre issue 3193). The copy
// computes nothing: the same values, in another memory order.
#include <algorithm>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/lowering/lowering_context.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Row-major order sticks a tensor on its last dimension of size > 1: what a copy lays it out as.
bool stickedRowMajor(const ValueDesc& desc) {
  const auto stick_dim = stickDimOf(desc);
  if (!stick_dim) return true;
  for (int64_t dim = static_cast<int64_t>(desc.shape.size()) - 1; dim >= 0; --dim) {
    if (desc.shape[dim] > 1) return dim == *stick_dim;
  }
  return true;
}

// The inputs of `node` to copy into row-major order: those of a mismatched pair that are not.
std::vector<size_t> operandsToCopy(const GraphEdit& edit, const Node& node) {
  std::vector<std::pair<size_t, ValueDesc>> operands;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (!node.input(i)->type()->cast<c10::TensorType>()) continue;
    auto desc = edit.describe(node.input(i));
    if (desc && desc->kind == "Tensor") operands.emplace_back(i, std::move(*desc));
  }
  std::vector<size_t> chosen;
  for (size_t a = 0; a < operands.size(); ++a) {
    for (size_t b = a + 1; b < operands.size(); ++b) {
      if (!sticksMismatch(operands[a].second, operands[b].second)) continue;
      for (const auto* operand : {&operands[a], &operands[b]}) {
        if (!stickedRowMajor(operand->second) &&
            std::find(chosen.begin(), chosen.end(), operand->first) == chosen.end()) {
          chosen.push_back(operand->first);
        }
      }
    }
  }
  return chosen;
}

}  // namespace

void restickify(const nlohmann::json& arguments, GraphEdit& edit,
                const DeviceProfile& /*profile*/) {
  const std::string pattern = arguments.at("module");
  torch::jit::Graph& graph = edit.graph();
  // Found first, changed after: describe() knows the nodes the model had, not the copies added.
  std::vector<std::pair<Node*, std::vector<size_t>>> found;
  const std::vector<std::string>& host = edit.hostModules();
  for (const Node* node : allNodes(graph)) {
    if (!node->kind().is_aten() || placedOnHost(*node)) continue;
    if (!isBinaryPointwise(node->kind().toQualString())) continue;
    const std::string module = modulePathOf(*node);
    if (!globMatch(pattern, module)) continue;
    // The host computes in row-major float32 whatever the layouts: nothing to copy there.
    if (std::any_of(host.begin(), host.end(),
                    [&](const std::string& kept) { return isWithin(module, kept); })) {
      continue;
    }
    auto inputs = operandsToCopy(edit, *node);
    if (!inputs.empty()) found.emplace_back(const_cast<Node*>(node), std::move(inputs));
  }
  for (auto& [node, inputs] : found) {
    torch::jit::WithInsertPoint insert_point(node);
    torch::jit::WithCurrentScope scope(graph, node->scope());
    for (const size_t input : inputs) {
      Value* copy = graph.insert(torch::jit::aten::contiguous, {node->input(input)});
      edit.noteAdded(copy->node());
      node->replaceInput(input, copy);
      ++edit.change().rewrites;
    }
  }
}

}  // namespace stickler
