#include "simulator/lowering/lowering_context.h"

#include <cstdlib>

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;
namespace attr = torch::jit::attr;

namespace {

bool isShapeArithmeticSource(const Node* node) {
  return node->kind() == prim::NumToTensor;
}

}  // namespace

LoweringContext::LoweringContext(const LoadedModel& model_, const DeviceProfile& profile_,
                                 const Placement& placement_, const LoweringOptions& options_)
    : model(model_), profile(profile_), placement(placement_), options(options_) {
  // Traced graphs compute shapes with 0-dim tensors: NumToTensor, then arithmetic on those.
  for (const Node* node : allNodes(*model.graph)) {
    bool from_shapes = isShapeArithmeticSource(node);
    if (!from_shapes && node->kind().is_aten()) {
      bool any_tensor = false;
      bool all_shapes = true;
      for (const Value* input : node->inputs()) {
        // Constants (a traced `tensor(2)`) neither make nor break shape arithmetic.
        if (input->type()->kind() != c10::TypeKind::TensorType ||
            input->node()->kind() == prim::Constant) {
          continue;
        }
        any_tensor = true;
        all_shapes = all_shapes && shape_values_.count(input);
      }
      from_shapes = any_tensor && all_shapes;
    }
    if (!from_shapes) continue;
    for (const Value* output : node->outputs()) shape_values_.insert(output);
  }
}

const NodeRecord* LoweringContext::record(const Node& node) const {
  auto it = model.records.find(&node);
  return it == model.records.end() ? nullptr : &it->second;
}

const ValueDesc* LoweringContext::inputDesc(const Node& node, size_t index) const {
  const NodeRecord* r = record(node);
  return r && index < r->inputs.size() ? &r->inputs[index] : nullptr;
}

const ValueDesc* LoweringContext::outputDesc(const Node& node, size_t index) const {
  const NodeRecord* r = record(node);
  return r && index < r->outputs.size() ? &r->outputs[index] : nullptr;
}

bool LoweringContext::isDataTensor(const Value* value) const {
  return value->type()->kind() == c10::TypeKind::TensorType && !shape_values_.count(value);
}

bool LoweringContext::isWeight(const Value* value) const {
  const Node* producer = value->node();
  return producer->kind() == prim::GetAttr || producer->kind() == prim::Constant;
}

std::string LoweringContext::weightName(const Value* value) const {
  return attributePath(value);
}

std::optional<int64_t> LoweringContext::intInput(const Node& node, size_t index) const {
  if (index >= node.inputs().size()) return std::nullopt;
  if (auto constant = torch::jit::toIValue(node.input(index))) {
    if (constant->isInt()) return constant->toInt();
    return std::nullopt;
  }
  const ValueDesc* desc = inputDesc(node, index);
  if (desc && desc->kind == "int" && !desc->value.empty())
    return std::strtoll(desc->value.c_str(), nullptr, 10);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> LoweringContext::intListInput(const Node& node,
                                                                  size_t index) const {
  if (index >= node.inputs().size()) return std::nullopt;
  const Value* value = node.input(index);
  if (auto constant = torch::jit::toIValue(value)) {
    if (constant->isIntList()) return constant->toIntVector();
    return std::nullopt;
  }
  const Node* producer = value->node();
  if (producer->kind() != prim::ListConstruct) return std::nullopt;
  std::vector<int64_t> values;
  for (size_t i = 0; i < producer->inputs().size(); ++i) {
    auto element = intInput(*producer, i);
    if (!element) return std::nullopt;
    values.push_back(*element);
  }
  return values;
}

std::vector<const Node*> LoweringContext::consumers(const Value* value, bool* returned) const {
  return atenConsumers(value, returned);
}

std::vector<const Node*> atenConsumers(const Value* value, bool* returned) {
  std::vector<const Node*> found;
  std::vector<const Value*> pending{value};
  while (!pending.empty()) {
    const Value* current = pending.back();
    pending.pop_back();
    for (const auto& use : current->uses()) {
      const Node* user = use.user;
      const auto kind = user->kind();
      if (kind == prim::Return) {
        if (returned) *returned = true;
      } else if (kind == prim::ListConstruct || kind == prim::TupleConstruct ||
                 kind == prim::ListUnpack || kind == prim::TupleUnpack ||
                 kind == prim::unchecked_cast) {
        for (const Value* output : user->outputs()) pending.push_back(output);
      } else if (kind.is_aten()) {
        found.push_back(user);
      }
    }
  }
  return found;
}

std::optional<WeightOperand> weightOperand(const LoweringContext& context, const Node& node) {
  // Whatever produced it: a module weight, a constant an adapter folded, or a matrix computed
  // on the fly are laid out alike (docs/simulator-assumptions.md, "Weight alignment").
  const std::string op = context.opName(node);
  auto shapeOf = [&](size_t index) -> const std::vector<int64_t>* {
    const ValueDesc* desc = context.inputDesc(node, index);
    return desc && desc->kind == "Tensor" && desc->shape.size() == 2 ? &desc->shape : nullptr;
  };
  if (op == "aten::linear") {
    if (const auto* shape = shapeOf(1))
      return WeightOperand{node.input(1), (*shape)[0], (*shape)[1]};
  } else if (op == "aten::addmm") {
    if (const auto* shape = shapeOf(2))
      return WeightOperand{node.input(2), (*shape)[1], (*shape)[0]};
  } else if ((op == "aten::mm" || op == "aten::matmul") && node.inputs().size() >= 2) {
    if (const auto* shape = shapeOf(1))
      return WeightOperand{node.input(1), (*shape)[1], (*shape)[0]};
  }
  return std::nullopt;
}

std::optional<int64_t> stickDimOf(const ValueDesc& desc) {
  std::optional<int64_t> best;
  for (size_t d = 0; d < desc.shape.size() && d < desc.strides.size(); ++d) {
    if (desc.shape[d] <= 1) continue;
    if (!best || desc.strides[d] < desc.strides[*best]) best = static_cast<int64_t>(d);
  }
  if (best && desc.strides[*best] != 1) return std::nullopt;  // no dense dimension
  return best;
}

int64_t normalizeDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

}  // namespace stickler
