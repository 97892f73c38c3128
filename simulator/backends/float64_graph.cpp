#include "simulator/backends/float64_graph.h"

#include <functional>

#include <torch/csrc/jit/ir/ir.h>

namespace stickler {

using torch::jit::Block;
using torch::jit::Node;
namespace prim = torch::jit::prim;

namespace {

c10::Symbol twinAttribute() {
  static const c10::Symbol twin = c10::Symbol::attr("stickler_float64");
  return twin;
}

}  // namespace

void attachFloat64Twin(Node& constant, const at::Tensor& twin) {
  constant.t_(twinAttribute(), twin.to(c10::kDouble).contiguous());
}

bool hasFloat64Twin(const Node& constant) {
  return constant.hasAttribute(twinAttribute());
}

at::Tensor float64TwinOf(const Node& constant) {
  return constant.t(twinAttribute());
}

bool widensToFloat64(c10::ScalarType type) {
  return type == c10::kFloat || type == c10::kBFloat16 || type == c10::kHalf;
}

std::shared_ptr<torch::jit::Graph> toFloat64Graph(const torch::jit::Graph& source,
                                                  bool widen_constants) {
  auto graph = const_cast<torch::jit::Graph&>(source).copy();  // copy() is not const in 1.13
  const auto float64 = static_cast<int64_t>(c10::ScalarType::Double);
  std::function<void(Block*)> visit = [&](Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* node = *it++;
      for (Block* inner : node->blocks()) visit(inner);
      if (node->kind() == prim::Constant) {
        auto value = torch::jit::toIValue(node->output());
        if (value && value->isTensor() && widensToFloat64(value->toTensor().scalar_type()) &&
            (widen_constants || hasFloat64Twin(*node))) {
          torch::jit::WithInsertPoint guard(node);
          const at::Tensor widened =
              hasFloat64Twin(*node) ? node->t(twinAttribute()) : value->toTensor().to(c10::kDouble);
          auto* replacement = graph->insertConstant(widened);
          replacement->node()->setScope(node->scope());
          node->output()->replaceAllUsesWith(replacement);
          node->destroy();
        }
        continue;
      }
      const auto* schema = node->maybeSchema();
      if (schema == nullptr) continue;
      for (size_t i = 0; i < node->inputs().size() && i < schema->arguments().size(); ++i) {
        if (schema->arguments()[i].name() != "dtype") continue;
        auto dtype = torch::jit::toIValue(node->input(i));
        if (!dtype || !dtype->isInt() ||
            !widensToFloat64(static_cast<c10::ScalarType>(dtype->toInt()))) {
          continue;
        }
        torch::jit::WithInsertPoint guard(node);
        node->replaceInput(i, graph->insertConstant(float64));
      }
    }
  };
  visit(graph->block());
  return graph;
}

torch::jit::Module toFloat64Module(const torch::jit::Module& module) {
  torch::jit::Module copy = module.clone();
  for (const torch::jit::Module& owner : copy.modules()) {
    auto object = owner._ivalue();
    for (size_t slot = 0; slot < object->slots().size(); ++slot) {
      const c10::IValue& value = object->getSlot(slot);
      if (value.isTensor() && value.toTensor().defined() && value.toTensor().is_floating_point()) {
        object->setSlot(slot, value.toTensor().to(c10::kDouble));
      }
    }
  }
  return copy;
}

c10::IValue toFloat64Value(const c10::IValue& value) {
  if (value.isTensor() && value.toTensor().is_floating_point()) {
    return value.toTensor().to(c10::kDouble);
  }
  return value;
}

}  // namespace stickler
