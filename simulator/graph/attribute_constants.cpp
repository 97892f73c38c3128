#include "simulator/graph/attribute_constants.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "simulator/graph/loaded_model.h"

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

void attributesToConstants(torch::jit::Graph& graph, const c10::IValue& self_value) {
  Value* self = graph.inputs().at(0);
  std::vector<Node*> reads;
  for (const Node* node : allNodes(graph)) {
    if (node->kind() == prim::GetAttr) reads.push_back(const_cast<Node*>(node));
  }
  for (Node* read : reads) {
    auto value = resolveAttribute(read->output(), self, self_value);
    if (!value || value->isObject()) continue;
    if (value->isTensor()) value = c10::IValue(value->toTensor().detach());
    torch::jit::WithInsertPoint insert_point(read);
    auto constant = torch::jit::tryInsertConstant(graph, *value);
    if (!constant) continue;
    read->output()->replaceAllUsesWith(*constant);
  }
  torch::jit::EliminateDeadCode(graph.block());
}

}  // namespace stickler
