#include "simulator/graph/graph_nodes.h"

#include <functional>
#include <sstream>

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;
namespace attr = torch::jit::attr;

std::optional<c10::IValue> resolveAttribute(const Value* value, const Value* self,
                                            const c10::IValue& self_value) {
  if (value == self) return self_value;
  if (value->node()->kind() != prim::GetAttr) return std::nullopt;
  auto owner = resolveAttribute(value->node()->input(), self, self_value);
  if (!owner || !owner->isObject()) return std::nullopt;
  const std::string name = value->node()->s(attr::name);
  if (!owner->toObject()->type()->hasAttribute(name)) return std::nullopt;
  return owner->toObject()->getAttr(name);
}

std::string attributePath(const Value* value) {
  std::string path;
  for (const Node* node = value->node(); node->kind() == prim::GetAttr;
       node = node->input()->node()) {
    const std::string name = node->s(attr::name);
    path = path.empty() ? name : name + "." + path;
  }
  return path;
}

std::string dtypeName(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat:
      return "float32";
    case c10::kHalf:
      return "float16";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kDouble:
      return "float64";
    case c10::kLong:
      return "int64";
    case c10::kInt:
      return "int32";
    case c10::kShort:
      return "int16";
    case c10::kChar:
      return "int8";
    case c10::kByte:
      return "uint8";
    case c10::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

ValueDesc describeValue(const c10::IValue& value) {
  ValueDesc desc;
  if (value.isTensor()) {
    const auto& tensor = value.toTensor();
    desc.kind = "Tensor";
    desc.shape = tensor.sizes().vec();
    desc.strides = tensor.strides().vec();
    desc.dtype = dtypeName(tensor.scalar_type());
  } else if (value.isNone()) {
    desc.kind = "None";
  } else if (value.isInt() || value.isDouble() || value.isBool()) {
    desc.kind = value.isInt() ? "int" : value.isDouble() ? "float" : "bool";
    std::ostringstream text;
    text << value;
    desc.value = text.str();
  } else if (value.isList()) {
    desc.kind = "list";
    desc.shape = {static_cast<int64_t>(value.toListRef().size())};
  } else if (value.isTuple()) {
    desc.kind = "tuple";
    desc.shape = {static_cast<int64_t>(value.toTupleRef().elements().size())};
  } else {
    desc.kind = value.tagKind();
  }
  return desc;
}

namespace {
void appendTensors(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) appendTensors(element, out);
  } else if (value.isList()) {
    for (const auto& element : value.toListRef()) appendTensors(element, out);
  }
}
}  // namespace

std::vector<at::Tensor> flattenTensors(const std::vector<c10::IValue>& values) {
  std::vector<at::Tensor> tensors;
  for (const auto& value : values) appendTensors(value, tensors);
  return tensors;
}

std::vector<const Node*> allNodes(const torch::jit::Graph& graph) {
  std::vector<const Node*> nodes;
  std::function<void(const torch::jit::Block*)> visit = [&](const torch::jit::Block* block) {
    for (const Node* node : block->nodes()) {
      nodes.push_back(node);
      for (const torch::jit::Block* inner : node->blocks()) visit(inner);
    }
  };
  visit(graph.block());
  return nodes;
}

}  // namespace stickler
