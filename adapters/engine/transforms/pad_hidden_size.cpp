// pad_hidden_size: a hidden size that is not a whole number of sticks (Granite-style 160) is
// padded with zeros to the next whole stick count in every weight that has it, so the residual
// stream carries zeros in the added positions. RMSNorm's mean over the hidden size becomes a sum
// divided by the original size, so the statistics stay those of the real values; hidden-state
// outputs are sliced back. LayerNorm (which subtracts a mean it would take over the padding too)
// is refused rather than silently changed.
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

at::Tensor padDims(const at::Tensor& tensor, int64_t size, int64_t padded) {
  at::Tensor result = tensor.detach();
  for (int64_t d = 0; d < result.dim(); ++d) {
    if (result.size(d) != size) continue;
    result = at::constant_pad_nd(result.movedim(d, -1), {0, padded - size}, 0).movedim(-1, d);
  }
  return result.contiguous();
}

// An int[] that is a constant, or a list built of constants (as traced graphs build them).
std::vector<int64_t> constantInts(const Value* value) {
  if (auto constant = torch::jit::toIValue(value)) {
    return constant->isIntList() ? constant->toIntVector() : std::vector<int64_t>{};
  }
  std::vector<int64_t> list;
  if (value->node()->kind() != prim::ListConstruct) return list;
  for (const Value* element : value->node()->inputs()) {
    auto constant = torch::jit::toIValue(element);
    if (!constant || !constant->isInt()) return {};
    list.push_back(constant->toInt());
  }
  return list;
}

std::vector<Node*> nodesOfKind(torch::jit::Graph& graph, c10::Symbol kind) {
  std::vector<Node*> nodes;
  for (const Node* node : allNodes(graph)) {
    if (node->kind() == kind) nodes.push_back(const_cast<Node*>(node));
  }
  return nodes;
}

class HiddenPadder {
 public:
  HiddenPadder(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile)
      : edit_(edit), graph_(edit.graph()), hidden_(arguments.at("size").get<int64_t>()) {
    if (hidden_ == 0) hidden_ = embeddingWidth();
    const int64_t stick = profile.stickElements();
    padded_ = (hidden_ + stick - 1) / stick * stick;  // 0 stays 0: nothing to do
  }

  void run() {
    if (padded_ == hidden_) return;
    refuseLayerNorms();
    const std::vector<Node*> means = hiddenMeans();  // from the records, before any change
    const std::vector<Value*> outputs = hiddenOutputs();
    padWeights();
    for (Node* mean : means) meanOverOriginalSize(mean);
    widenShapeConstants();
    for (Value* output : outputs) sliceBack(output);
    ++edit_.change().rewrites;
  }

 private:
  // The width of the first embedding table (tokens to hidden), or 0 when there is none.
  int64_t embeddingWidth() {
    for (Node* node : nodesOfKind(graph_, aten::embedding)) {
      auto weight = edit_.constantOrWeight(node->input(0));
      if (weight && weight->isTensor() && weight->toTensor().dim() == 2) {
        return weight->toTensor().size(1);
      }
    }
    return 0;  // no embedding, no hidden size to read: nothing to pad unless size= says
  }

  int64_t lastDim(const Value* value) const {
    auto desc = edit_.describe(value);
    if (!desc || desc->kind != "Tensor" || desc->shape.empty()) return -1;
    return desc->shape.back();
  }

  void refuseLayerNorms() {
    for (Node* norm : nodesOfKind(graph_, aten::layer_norm)) {
      if (lastDim(norm->input(0)) == hidden_) {
        throw UserError("pad_hidden_size: " + modulePathOf(*norm) +
                        " is a layer_norm over the hidden size, whose mean and variance would "
                        "count the padding; only RMSNorm-style models can be padded");
      }
    }
  }

  // RMSNorm's variance: mean(x * x, [-1]) over the hidden size.
  std::vector<Node*> hiddenMeans() {
    std::vector<Node*> means;
    for (Node* mean : nodesOfKind(graph_, aten::mean)) {
      if (mean->inputs().size() < 2 || lastDim(mean->input(0)) != hidden_) continue;
      const auto list = constantInts(mean->input(1));
      if (list.size() == 1 && (list[0] == -1 || list[0] == rankOf(mean->input(0)) - 1)) {
        means.push_back(mean);
      }
    }
    return means;
  }

  int64_t rankOf(const Value* value) const {
    auto desc = edit_.describe(value);
    return desc ? static_cast<int64_t>(desc->shape.size()) : -1;
  }

  // The tensors the graph returns (directly or in a tuple) whose last dimension is hidden.
  std::vector<Value*> hiddenOutputs() {
    std::vector<Value*> outputs;
    for (Value* output : graph_.outputs()) {
      if (output->node()->kind() == prim::TupleConstruct) {
        for (Value* element : output->node()->inputs()) {
          if (lastDim(element) == hidden_) outputs.push_back(element);
        }
      } else if (lastDim(output) == hidden_) {
        outputs.push_back(output);
      }
    }
    return outputs;
  }

  // Weights read from the module, and the constants earlier adapters made of them.
  void padWeights() {
    std::vector<Node*> reads = nodesOfKind(graph_, prim::GetAttr);
    for (Node* constant : nodesOfKind(graph_, prim::Constant)) reads.push_back(constant);
    for (Node* read : reads) {
      auto value = edit_.constantOrWeight(read->output());
      if (!value || !value->isTensor()) continue;
      const at::Tensor& tensor = value->toTensor();
      if (std::find(tensor.sizes().begin(), tensor.sizes().end(), hidden_) ==
          tensor.sizes().end()) {
        continue;
      }
      torch::jit::WithInsertPoint insert_point(read);
      torch::jit::WithCurrentScope scope(graph_, read->scope());
      read->output()->replaceAllUsesWith(graph_.insertConstant(padDims(tensor, hidden_, padded_)));
      edit_.destroyIfUnused(read);
    }
  }

  // mean(x, [-1], keepdim, dtype) -> sum(x, [-1], keepdim, dtype) / hidden: the padding adds
  // zeros to the sum and must not add to the count.
  void meanOverOriginalSize(Node* mean) {
    torch::jit::WithInsertPoint insert_point(mean);
    torch::jit::WithCurrentScope scope(graph_, mean->scope());
    // mean.dim(self, dim, keepdim, dtype) -> sum.dim_IntList(self, dim, keepdim, *, dtype)
    std::vector<torch::jit::NamedValue> arguments;
    std::vector<torch::jit::NamedValue> keywords;
    for (size_t i = 0; i < mean->inputs().size(); ++i) {
      if (i == 3) {
        keywords.emplace_back("dtype", mean->input(i));
      } else {
        arguments.emplace_back(mean->input(i));
      }
    }
    Value* sum = graph_.insert(aten::sum, arguments, keywords);
    Value* quotient = graph_.insert(aten::div, {sum, static_cast<double>(hidden_)});
    for (Value* value : {sum, quotient}) {
      value->node()->setSourceRange(mean->sourceRange());
      edit_.noteAdded(value->node());
    }
    quotient->setType(mean->output()->type());
    mean->output()->replaceAllUsesWith(quotient);
    edit_.destroy(mean);
  }

  // view(-1, hidden) and friends: shape constants equal to the hidden size.
  void widenShapeConstants() {
    for (Node* shape : nodesOfKind(graph_, prim::ListConstruct)) {
      bool feeds_shape = false;
      for (const auto& use : shape->output()->uses()) {
        const auto kind = use.user->kind();
        feeds_shape = feeds_shape || kind == aten::view || kind == aten::reshape ||
                      kind == aten::expand || kind == aten::zeros;
      }
      if (!feeds_shape) continue;
      for (size_t i = 0; i < shape->inputs().size(); ++i) {
        auto size = edit_.constantOrWeight(shape->input(i));
        if (!size || !size->isInt() || size->toInt() != hidden_) continue;
        torch::jit::WithInsertPoint insert_point(shape);
        shape->replaceInput(i, graph_.insertConstant(padded_));
      }
    }
  }

  void sliceBack(Value* output) {
    Node* producer = output->node();
    torch::jit::WithInsertPoint insert_point(producer->next());
    torch::jit::WithCurrentScope scope(graph_, producer->scope());
    Value* sliced = graph_.insert(aten::slice, {output, -1, 0, hidden_, 1});
    sliced->node()->setSourceRange(producer->sourceRange());
    edit_.noteAdded(sliced->node());
    sliced->setType(output->type());
    output->replaceAllUsesAfterNodeWith(sliced->node(), sliced);
  }

  GraphEdit& edit_;
  torch::jit::Graph& graph_;
  int64_t hidden_;
  int64_t padded_ = 0;
};

}  // namespace

void padHiddenSize(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile) {
  torch::NoGradGuard no_grad;
  HiddenPadder(arguments, edit, profile).run();
}

}  // namespace stickler
