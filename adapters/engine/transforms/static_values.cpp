#include "adapters/engine/transforms/static_values.h"

namespace stickler {

namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

bool StaticValues::isStatic(const torch::jit::Value* value) {
  auto known = memo_.find(value);
  if (known != memo_.end()) return known->second;
  const bool result = decide(value);
  memo_[value] = result;
  return result;
}

bool StaticValues::decide(const torch::jit::Value* value) {
  const torch::jit::Node* node = value->node();
  if (value == graph_.inputs().at(0)) return true;  // self: the weights
  if (node->kind() == prim::Param) return false;    // an input's values
  if (node->kind() == aten::size || node->kind() == prim::dtype || node->kind() == prim::device ||
      node->kind() == aten::dim) {
    return true;  // metadata: fixed by the input shapes
  }
  if (!node->blocks().empty() || node->hasSideEffects()) return false;
  for (const torch::jit::Value* input : node->inputs()) {
    if (!isStatic(input)) return false;
  }
  return true;
}

}  // namespace stickler
