// pad_attention_heads on fused attention: GPT-2's attention computes query, key and value with one
// projection (c_attn, 3 x heads x head_dim outputs) and splits the result. Each head of each of
// the three is zero-padded at its end until the heads fill whole sticks; the split, the views
// into and out of heads, and the output projection's rows follow. The attention scale, which
// GPT-2 reads from the value heads' size, is pinned to the real head size.
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/attention_structure.h"
#include "adapters/engine/transforms/head_padding.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

struct FusedAttention {
  std::vector<Value*> qkv_weight, qkv_bias, o_weight;
};

class FusedHeadPadder {
 public:
  FusedHeadPadder(const FoundAttention& found, int64_t head_dim, GraphEdit& edit,
                  const DeviceProfile& profile)
      : edit_(edit),
        stick_(profile.stickElements()),
        found_(found),
        o_module_(modulePathOf(*found.o)),
        target_(head_dim) {}

  void run() {
    FusedAttention attention{{projectionWeight(*found_.q)}, {}, {projectionWeight(*found_.o)}};
    if (Value* bias = projectionBias(*found_.q)) attention.qkv_bias.push_back(bias);
    pad(found_.module, attention);
  }

 private:
  at::Tensor tensorOf(const Value* read) const {
    auto value = edit_.constantOrWeight(read);
    if (!value || !value->isTensor()) throw UserError("pad_attention_heads: no tensor read");
    return value->toTensor();
  }

  void pad(const std::string& module, const FusedAttention& attention) {
    const int64_t out_dim = projectionOutputDim(*found_.q);
    const int64_t total = tensorOf(attention.qkv_weight.front()).size(out_dim);
    if (total % 3 != 0) {
      throw UserError("pad_attention_heads: " + modulePathOf(*found_.q) + " has " +
                      std::to_string(total) + " outputs, not three equal parts");
    }
    const int64_t width = total / 3;
    const auto [heads, head_dim] = headSplit(module, width);
    int64_t padded = target_;
    if (padded == 0) padded = paddedHeadSize(edit_, module, heads, head_dim, stick_);
    if (padded < head_dim || heads * padded % stick_ != 0) {
      throw UserError("pad_attention_heads: head_dim " + std::to_string(padded) +
                      " must be at least " + std::to_string(head_dim) +
                      " and fill whole sticks with the " + std::to_string(heads) + " heads");
    }
    if (padded == head_dim) return;
    const at::TensorOptions options = tensorOf(attention.qkv_weight.front()).options();
    for (Value* read : attention.qkv_weight) {
      replaceWeightRead(edit_, read, padHeadsAlong(tensorOf(read), out_dim, head_dim, padded));
    }
    for (Value* read : attention.qkv_bias) {
      replaceWeightRead(edit_, read, padHeads(tensorOf(read), head_dim, padded));
    }
    for (Value* read : attention.o_weight) {
      const int64_t in_dim = 1 - projectionOutputDim(*found_.o);
      replaceWeightRead(edit_, read, padHeadsAlong(tensorOf(read), in_dim, head_dim, padded));
    }
    pinHeadSizeReads(module, heads, head_dim);
    widenShapes(module, heads, head_dim, padded);
    // No RoPE here: each head's values sit first, its padding after them.
    std::vector<int64_t> in_order(head_dim);
    for (int64_t i = 0; i < head_dim; ++i) in_order[i] = i;
    keepCachesUnpadded(edit_, module, options, head_dim, padded, stick_,
                       [&](const Node&) { return in_order; });
    ++edit_.change().rewrites;
  }

  bool inOutputProjection(const Node& node) const {
    return isWithin(modulePathOf(node), o_module_);
  }

  // [..., heads, head_dim] in a view of the module: both constants, heads x head_dim = width.
  std::pair<int64_t, int64_t> headSplit(const std::string& module, int64_t width) {
    for (const Node* node : allNodes(edit_.graph())) {
      const Node* shape = viewShapeList(*node);
      if (shape == nullptr || !isWithin(modulePathOf(*node), module)) continue;
      const auto heads = lastInt(edit_, *shape, 1);
      const auto head_dim = lastInt(edit_, *shape);
      if (heads && head_dim && *heads * *head_dim == width) return {*heads, *head_dim};
    }
    throw UserError("pad_attention_heads: found no [..., heads, head_dim] view of " +
                    std::to_string(width) + " values in " + module);
  }

  // size(-1) of a [batch, heads, length, head_dim] tensor (GPT-2's scale, value.size(-1) ** 0.5)
  // is the real head size, whatever the padding.
  void pinHeadSizeReads(const std::string& module, int64_t heads, int64_t head_dim) {
    for (const Node* node : allNodes(edit_.graph())) {
      if (node->kind() != aten::size || node->inputs().size() != 2) continue;
      if (!isWithin(modulePathOf(*node), module)) continue;
      auto dim = torch::jit::toIValue(node->input(1));
      auto desc = edit_.describe(node->input(0));
      if (!dim || !dim->isInt() || !desc || desc->shape.size() != 4) continue;
      if ((dim->toInt() != -1 && dim->toInt() != 3) || desc->shape[1] != heads ||
          desc->shape[3] != head_dim) {
        continue;
      }
      Node* size = const_cast<Node*>(node);
      torch::jit::WithInsertPoint insert_point(size);
      size->output()->replaceAllUsesWith(edit_.graph().insertConstant(head_dim));
      edit_.destroy(size);
    }
  }

  // The views into heads ([..., heads, head_dim]), out of them and out of the fused projection
  // ([..., heads x head_dim], [..., 3 x heads x head_dim]) and the split into q, k and v.
  void widenShapes(const std::string& module, int64_t heads, int64_t head_dim, int64_t padded) {
    const int64_t width = heads * head_dim;
    for (const Node* node : allNodes(edit_.graph())) {
      if (!isWithin(modulePathOf(*node), module) || inOutputProjection(*node)) continue;
      if (node->kind() == aten::split && node->inputs().size() >= 2) {
        auto size = torch::jit::toIValue(node->input(1));
        if (size && size->isInt() && size->toInt() == width) {
          setIntInput(edit_, *const_cast<Node*>(node), 1, heads * padded);
        }
        continue;
      }
      Node* shape = viewShapeList(*node);
      if (shape == nullptr) continue;
      const auto size = lastInt(edit_, *shape);
      if (!size) continue;
      const size_t last = shape->inputs().size() - 1;
      if (*size == head_dim && lastInt(edit_, *shape, 1) == heads) {
        setIntInput(edit_, *shape, last, padded);  // into heads
      } else if (*size == width) {
        setIntInput(edit_, *shape, last, heads * padded);
      } else if (*size == 3 * width) {
        setIntInput(edit_, *shape, last, 3 * heads * padded);
      }
    }
  }

  GraphEdit& edit_;
  int64_t stick_;
  const FoundAttention& found_;
  std::string o_module_;
  int64_t target_;
};

}  // namespace

void padFusedAttentionHeads(const FoundAttention& attention, int64_t head_dim, GraphEdit& edit,
                            const DeviceProfile& profile) {
  if (attention.o == nullptr) {
    throw UserError("pad_attention_heads: no projection reads the merged heads of " +
                    attention.module + ": the padding would reach what follows");
  }
  FusedHeadPadder(attention, head_dim, edit, profile).run();
}

}  // namespace stickler
