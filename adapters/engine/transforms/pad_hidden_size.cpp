// pad_hidden_size: a hidden size that is not a whole number of sticks (Granite-style 160) is
// padded with zeros to the next whole stick count in every weight that has it, so the residual
// stream carries zeros in the added positions. RMSNorm's mean over the hidden size becomes a sum
// divided by the original size, so the statistics stay those of the real values; hidden-state
// outputs are sliced back. LayerNorm, which would take its mean and variance over the padding
// too, is decomposed with both taken over the real positions only (the padding masked out of
// the variance), so the padded positions of its output stay zero. In an image encoder whose
// hidden size is the channels of NCHW images (ConvNeXt), a norm written out over dimension 1
// gets the same treatment, and a depthwise convolution keeps one group per padded channel.
#include <algorithm>
#include <set>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/shared_constants.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/decompositions.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/lowering_context.h"
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

// A decode graph's KV cache keeps the model's head_dim (keepCachesUnpadded), and when a head is
// as wide as the hidden size (one head of 96) its sizes look like the hidden size. The cache is
// the graph's input and output, which this transform does not change: what reads it back (a
// matmul of the cache, or of a cast of it, with the matrix that puts a padded head's zeros back)
// and the empty cache a prefill builds itself are left alone. (The matrix that takes the zeros
// out for writing, when a head's values are not runs of slices, is whole sticks both ways.)
bool readsTheCache(const Node& node) {
  if (node.kind() != aten::matmul) return false;
  const Node* read = node.input(0)->node();
  while (read->kind() == aten::to || read->kind() == aten::contiguous) {
    read = read->input(0)->node();
  }
  return read->kind() == aten::index_copy;
}

// Whether `value` becomes a cache that index_copy writes into (through selects and slices of
// the stacked caches, the tuples they travel in).
bool becomesACache(const Value* value) {
  std::vector<const Value*> pending = {value};
  std::set<const Value*> seen;
  while (!pending.empty()) {
    const Value* current = pending.back();
    pending.pop_back();
    if (!seen.insert(current).second) continue;
    for (const auto& use : current->uses()) {
      const Node* user = use.user;
      if (user->kind() == aten::index_copy && use.offset == 0) return true;
      if (user->kind() == aten::select || user->kind() == aten::slice ||
          user->kind() == aten::unbind || user->kind() == prim::ListUnpack ||
          user->kind() == aten::__getitem__ || user->kind() == prim::TupleConstruct ||
          user->kind() == prim::TupleUnpack || user->kind() == aten::to) {
        for (const Value* output : user->outputs()) pending.push_back(output);
      }
    }
  }
  return false;
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
    const std::vector<Node*> norms = hiddenLayerNorms();
    const std::vector<HiddenMean> means = hiddenMeans();  // from the records, before any change
    const std::vector<CenteredValue> centered = centeredByHiddenMeans(means);
    const auto depthwise = depthwiseGroups();
    const std::vector<OutputSlot> outputs = hiddenOutputs();
    padWeights();
    for (Node* norm : norms) decomposeLayerNormOverPadding(edit_, norm, hidden_, padded_);
    for (const CenteredValue& value : centered) maskPadding(value);
    for (const HiddenMean& mean : means) meanOverOriginalSize(mean.mean);
    for (const auto& [convolution, groups] : depthwise) {
      torch::jit::WithInsertPoint insert_point(convolution);
      convolution->replaceInput(groups, graph_.insertConstant(padded_));
    }
    widenShapeConstants();
    for (const OutputSlot& output : outputs) sliceBack(output);
    ++edit_.change().rewrites;
  }

 private:
  // The width of the first embedding table (tokens to hidden), or of the first layer_norm.
  int64_t embeddingWidth() {
    for (Node* node : nodesOfKind(graph_, aten::embedding)) {
      auto weight = edit_.constantOrWeight(node->input(0));
      if (weight && weight->isTensor() && weight->toTensor().dim() == 2) {
        return weight->toTensor().size(1);
      }
    }
    // No token embedding (an image model): the size the first layer_norm normalizes over.
    for (Node* norm : nodesOfKind(graph_, aten::layer_norm)) {
      const auto shape = constantInts(norm->input(1));
      if (shape.size() == 1) return shape[0];
    }
    return 0;  // nothing to read the hidden size from: nothing to pad unless size= says
  }

  int64_t lastDim(const Value* value) const {
    auto desc = edit_.describe(value);
    if (!desc || desc->kind != "Tensor" || desc->shape.empty()) return -1;
    return desc->shape.back();
  }

  std::vector<Node*> hiddenLayerNorms() {
    std::vector<Node*> norms;
    for (Node* norm : nodesOfKind(graph_, aten::layer_norm)) {
      if (lastDim(norm->input(0)) == hidden_) norms.push_back(norm);
    }
    return norms;
  }

  // A mean over a dimension of the hidden size, that dimension, and the rank of what it reads.
  struct HiddenMean {
    Node* mean;
    int64_t dim;
    int64_t rank;
  };

  // Means over the hidden size: RMSNorm's variance, mean(x * x, [-1]), and a channels-first
  // norm's statistics over dimension 1 of an NCHW image (ConvNeXt's x.mean(1, keepdim=True)).
  std::vector<HiddenMean> hiddenMeans() {
    std::vector<HiddenMean> means;
    for (Node* mean : nodesOfKind(graph_, aten::mean)) {
      if (mean->inputs().size() < 2) continue;
      const auto desc = edit_.describe(mean->input(0));
      const auto list = constantInts(mean->input(1));
      if (!desc || desc->kind != "Tensor" || list.size() != 1) continue;
      const auto rank = static_cast<int64_t>(desc->shape.size());
      const int64_t dim = normalizeDim(list[0], rank);
      if (dim >= 0 && dim < rank && desc->shape[dim] == hidden_) means.push_back({mean, dim, rank});
    }
    return means;
  }

  // x - mean(x, [d], keepdim=True) over the hidden size: the padded positions of x are zero, so
  // they would come out as -mean and count in the variance. Each such difference is multiplied
  // by a mask of the real positions along d (layer_norm_over_padding does the same for a
  // decomposed layer_norm).
  struct CenteredValue {
    Node* sub;
    int64_t dim;   // the hidden dimension of the difference
    int64_t rank;  // its rank
  };

  static std::vector<CenteredValue> centeredByHiddenMeans(const std::vector<HiddenMean>& means) {
    std::vector<CenteredValue> centered;
    for (const HiddenMean& hidden : means) {
      Node* mean = hidden.mean;
      const auto keepdim =
          mean->inputs().size() > 2 ? torch::jit::toIValue(mean->input(2)) : c10::nullopt;
      if (!keepdim || !keepdim->isBool() || !keepdim->toBool()) continue;
      for (const auto& use : mean->output()->uses()) {
        Node* sub = use.user;
        if (sub->kind() != aten::sub || use.offset != 1 || sub->input(0) != mean->input(0))
          continue;
        centered.push_back({sub, hidden.dim, hidden.rank});
      }
    }
    return centered;
  }

  void maskPadding(const CenteredValue& centered) {
    std::vector<int64_t> shape(static_cast<size_t>(centered.rank - centered.dim), 1);
    shape[0] = padded_;
    Node* sub = centered.sub;
    torch::jit::WithInsertPoint insert_point(sub->next());
    torch::jit::WithCurrentScope scope(graph_, sub->scope());
    Value* real = graph_.insertConstant(realPositionsMask(edit_, sub->output(), shape, hidden_));
    Value* masked = graph_.insert(aten::mul, {sub->output(), real});
    masked->node()->setSourceRange(sub->sourceRange());
    edit_.noteAdded(masked->node());
    masked->setType(sub->output()->type());
    sub->output()->replaceAllUsesAfterNodeWith(masked->node(), masked);
  }

  // A depthwise convolution over the hidden channels (weight [hidden, 1, k, k], groups = hidden,
  // ConvNeXt's dwconv): its weight is padded with the rest, and its groups follow.
  std::vector<std::pair<Node*, size_t>> depthwiseGroups() {
    std::vector<std::pair<Node*, size_t>> found;
    for (const Node* node : allNodes(graph_)) {
      size_t groups = 0;
      if (node->kind() == aten::_convolution) {
        groups = 8;
      } else if (node->kind() == aten::conv2d || node->kind() == aten::conv1d) {
        groups = 6;
      } else {
        continue;
      }
      if (node->inputs().size() <= groups) continue;
      auto count = edit_.constantOrWeight(node->input(groups));
      auto weight = edit_.constantOrWeight(node->input(1));
      if (!count || !count->isInt() || count->toInt() != hidden_ || !weight ||
          !weight->isTensor() || weight->toTensor().size(0) != hidden_) {
        continue;
      }
      found.emplace_back(const_cast<Node*>(node), groups);
    }
    return found;
  }

  // Where the graph returns a tensor whose last dimension is hidden: the graph output and, for
  // a tuple, the element (-1: the output itself). Positions rather than values, because a
  // decomposed layer_norm hands back a new value in the same place.
  struct OutputSlot {
    size_t output;
    int element;
  };

  std::vector<OutputSlot> hiddenOutputs() {
    std::vector<OutputSlot> slots;
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      Value* output = graph_.outputs()[i];
      if (output->node()->kind() == prim::TupleConstruct) {
        const auto elements = output->node()->inputs();
        for (size_t e = 0; e < elements.size(); ++e) {
          if (lastDim(elements[e]) == hidden_) slots.push_back({i, static_cast<int>(e)});
        }
      } else if (lastDim(output) == hidden_) {
        slots.push_back({i, -1});
      }
    }
    return slots;
  }

  Value* valueAt(const OutputSlot& slot) {
    Value* output = graph_.outputs()[slot.output];
    return slot.element < 0 ? output : output->node()->input(slot.element);
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
      const auto& uses = read->output()->uses();
      if (!uses.empty() && std::all_of(uses.begin(), uses.end(), [](const torch::jit::Use& use) {
            return readsTheCache(*use.user);
          })) {
        continue;
      }
      torch::jit::WithInsertPoint insert_point(read);
      torch::jit::WithCurrentScope scope(graph_, read->scope());
      read->output()->replaceAllUsesWith(
          insertSharedConstant(graph_, padDims(tensor, hidden_, padded_)));
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
        if (kind == aten::zeros && becomesACache(use.user->output())) continue;
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

  // Only what the model returns is sliced: the layers after the producer (a pooler reading
  // the last hidden state) keep computing on the padded values.
  void sliceBack(const OutputSlot& slot) {
    Value* output = valueAt(slot);
    Node* user = graph_.outputs()[slot.output]->node();
    if (slot.element < 0) user = graph_.return_node();
    Node* producer = output->node();
    torch::jit::WithInsertPoint insert_point(user);
    torch::jit::WithCurrentScope scope(graph_, producer->scope());
    Value* sliced = graph_.insert(aten::slice, {output, -1, 0, hidden_, 1});
    sliced->node()->setSourceRange(producer->sourceRange());
    edit_.noteAdded(sliced->node());
    sliced->setType(output->type());
    user->replaceInput(slot.element < 0 ? slot.output : static_cast<size_t>(slot.element), sliced);
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
