// pad_attention_heads: RoPE as a matmul needs head_dim/2 to fill whole sticks, so heads of 32
// or 64 values are zero-padded (Granite 3.3 2B: 64 -> 128, FACTS.md). Each half of a query or
// key head gets zeros after it, so rotate_half still swaps the model's own halves; the rotary
// frequencies get zero entries (cos 1, sin 0) for the padding, value heads get zeros at their
// end, and o_proj reads those positions with zero columns. Scores and outputs are the same sums
// with zero terms added. Without RoPE (rotary=""), heads are padded to whole sticks: every
// q, k and v head gets zeros at its end, and the view that merges the heads back is widened.
#include <algorithm>
#include <set>
#include <sstream>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
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

// One attention module's tensors, by role, and the graph values that read them.
struct AttentionWeights {
  std::map<std::string, std::vector<Value*>> reads;  // "q.weight", "o.weight", "rotary", ...
  std::map<std::string, at::Tensor> tensors;
};

class HeadPadder {
 public:
  HeadPadder(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile)
      : edit_(edit), stick_(profile.stickElements()) {
    module_ = arguments.at("module");
    // Each child name may list alternatives, "self.query|attention.query", so that one adapter
    // covers the same attention under the names of several model families.
    for (const char* role : {"q", "k", "v", "o"}) {
      std::stringstream names(arguments.at(role).get<std::string>());
      for (std::string child; std::getline(names, child, '|');) {
        if (!child.empty()) roles_.emplace_back(child, role);
      }
    }
    rotary_ = arguments.at("rotary");
    target_ = arguments.at("head_dim");
  }

  void run() {
    collect();
    for (auto& [module, weights] : attention_) pad(module, weights);
  }

 private:
  // Every weight, bias and rotary table read under a matching attention module.
  void collect() {
    for (const Node* read : allNodes(edit_.graph())) {
      if (read->kind() != prim::GetAttr) continue;
      Node* node = const_cast<Node*>(read);  // allNodes is read-only; this edit owns the graph
      const std::string path = attributePath(node->output());
      for (const auto& [child, role] : roles_) {
        for (const char* kind : {"weight", "bias"}) {
          const std::string suffix = "." + child + "." + kind;
          if (endsWithSuffix(path, suffix))
            note(path.substr(0, path.size() - suffix.size()), role + "." + kind, node->output());
        }
      }
      const std::string suffix = "." + rotary_;
      if (!rotary_.empty() && endsWithSuffix(path, suffix)) {
        note(path.substr(0, path.size() - suffix.size()), "rotary", node->output());
      }
    }
  }

  void note(const std::string& module, const std::string& role, Value* value) {
    if (!globMatch(module_, module)) return;
    auto tensor = edit_.constantOrWeight(value);
    if (!tensor || !tensor->isTensor()) return;
    attention_[module].reads[role].push_back(value);
    attention_[module].tensors[role] = tensor->toTensor();
  }

  void pad(const std::string& module, AttentionWeights& weights) {
    const bool rope = !rotary_.empty();
    // A module with an o but no q (ViT's "output.dense" seen by a BERT-style adapter) is not
    // attention of this form.
    if (!weights.tensors.count("q.weight")) return;
    // Whether the heads need padding is told from q (and the rotary table) alone; the other
    // roles are required only then: a module whose heads already fit has nothing to do here,
    // whatever its output projection is called (not applicable, not refused).
    const auto requireRoles = [&](std::initializer_list<const char*> roles) {
      for (const char* role : roles) {
        if (!weights.tensors.count(role)) {
          throw UserError("pad_attention_heads: " + module + " has no " + role +
                          " (check the q, k, v, o and rotary arguments)");
        }
      }
    };
    if (rope) requireRoles({"rotary"});
    // The q, k and v projections, found before their weights are replaced (q's first).
    std::vector<Node*> projections;
    std::map<const Node*, char> role_of;  // 'q', 'k' or 'v'
    for (const char* role : {"q.weight", "k.weight", "v.weight"}) {
      for (const Value* read : weights.reads[role]) {
        for (const auto& use : read->uses()) {
          if (use.user->kind() != aten::linear) continue;
          projections.push_back(use.user);
          role_of[use.user] = role[0];
        }
      }
    }
    if (projections.empty()) {
      throw UserError("pad_attention_heads: no linear layer reads the q, k or v weights of " +
                      module);
    }
    // Plain variables, not a structured binding: the lambda below captures them.
    const std::pair<int64_t, int64_t> split =
        rope ? std::pair<int64_t, int64_t>{0, weights.tensors["rotary"].numel() * 2}
             : headSplit(module, *projections.front());
    const int64_t heads = split.first;
    const int64_t head_dim = split.second;
    // RoPE as a matmul needs each half of a head in whole sticks; otherwise all heads together
    // must fill whole sticks (3 heads of 32 become 3 of 64; 2 heads of 32 already do).
    const auto fits = [&](int64_t size) {
      return rope ? size % (2 * stick_) == 0 : heads * size % stick_ == 0;
    };
    int64_t padded = target_;
    if (padded == 0) {
      padded = rope ? (head_dim + 2 * stick_ - 1) / (2 * stick_) * 2 * stick_
                    : headSizeFillingSticks(heads, head_dim, stick_);
    }
    if (!fits(padded) || padded < head_dim) {
      throw UserError("pad_attention_heads: head_dim " + std::to_string(padded) +
                      " must be at least " + std::to_string(head_dim) +
                      (rope ? " and a multiple of two sticks (" + std::to_string(2 * stick_) + ")"
                            : " and fill whole sticks with the " + std::to_string(heads) +
                                  " heads (" + std::to_string(stick_) + " values each)"));
    }
    if (padded == head_dim) return;
    requireRoles({"k.weight", "v.weight", "o.weight"});
    for (auto& [role, tensor] : weights.tensors) {
      at::Tensor replacement;
      const bool query_or_key =
          role == "q.weight" || role == "q.bias" || role == "k.weight" || role == "k.bias";
      if (role == "rotary") {
        replacement = at::constant_pad_nd(tensor.detach(), {0, (padded - head_dim) / 2}, 0);
      } else if (query_or_key && rope) {
        replacement = padHalves(tensor, head_dim, padded);
      } else if (query_or_key || role == "v.weight" || role == "v.bias") {
        replacement = padHeads(tensor, head_dim, padded);
      } else if (role == "o.weight") {
        replacement = padHeadsAlong(tensor, 1, head_dim, padded);
      } else {
        continue;  // o.bias: the output size does not change
      }
      for (Value* read : weights.reads[role]) replaceWeightRead(edit_, read, replacement);
    }
    // The merge first: once split, a padded head can have the merged width (2 x 32 -> 64).
    if (!rope) widenHeadMerge(module, heads * head_dim, heads * padded);
    for (Node* projection : projections) widenHeadSplit(module, *projection, head_dim, padded);
    keepCachesUnpadded(edit_, module, weights.tensors["k.weight"].options(), head_dim, padded,
                       [&](const Node& write) {
                         const char role = projectionFeeding(write.input(3), role_of, module);
                         if (role != 'k' && role != 'v') {
                           throw UserError("pad_attention_heads: the cache write at " +
                                           modulePathOf(write) +
                                           " is fed by neither the key nor the value projection");
                         }
                         // Keys under RoPE are padded after each half (padHalves).
                         std::vector<int64_t> at(head_dim);
                         for (int64_t i = 0; i < head_dim; ++i) {
                           const bool second_half = role == 'k' && rope && i >= head_dim / 2;
                           at[i] = second_half ? padded / 2 + (i - head_dim / 2) : i;
                         }
                         return at;
                       });
    ++edit_.change().rewrites;
  }

  // Which of q, k and v feeds `value` within the attention module (metadata reads such as a
  // dtype taken from the values do not count): 0 when none or several.
  static char projectionFeeding(const Value* value, const std::map<const Node*, char>& role_of,
                                const std::string& module) {
    std::set<char> found;
    std::set<const Node*> seen;
    std::vector<const Value*> pending = {value};
    while (!pending.empty()) {
      const Value* current = pending.back();
      const Node* node = current->node();
      pending.pop_back();
      // A scripted helper's returned (q, k, v) are unpacked from the tuple it built: follow
      // only the element this value is.
      if (node->kind() == prim::TupleUnpack &&
          node->input()->node()->kind() == prim::TupleConstruct) {
        const auto outputs = node->outputs();
        const size_t index = std::find(outputs.begin(), outputs.end(), current) - outputs.begin();
        pending.push_back(node->input()->node()->input(index));
        continue;
      }
      if (!seen.insert(node).second || !isWithin(modulePathOf(*node), module)) continue;
      if (auto role = role_of.find(node); role != role_of.end()) {
        found.insert(role->second);
        continue;
      }
      if (node->kind() == prim::dtype || node->kind() == aten::size ||
          node->kind() == prim::device) {
        continue;
      }
      for (const Value* input : node->inputs()) pending.push_back(input);
    }
    return found.size() == 1 ? *found.begin() : 0;
  }

  // The projection's view as [..., heads, head_dim], both constants (traced BERT and ViT).
  std::pair<int64_t, int64_t> headSplit(const std::string& module, const Node& projection) {
    for (const auto& use : projection.output()->uses()) {
      const Node* shape = viewShapeList(*use.user);
      if (shape == nullptr) continue;
      const auto heads = lastInt(edit_, *shape, 1);
      const auto head_dim = lastInt(edit_, *shape);
      if (heads && head_dim) return {*heads, *head_dim};
    }
    throw UserError("pad_attention_heads: found no [..., heads, head_dim] view of " +
                    modulePathOf(projection) + " in " + module);
  }

  // The context's view back to [..., heads * head_dim] inside the attention module.
  void widenHeadMerge(const std::string& module, int64_t width, int64_t padded_width) {
    for (const Node* node : allNodes(edit_.graph())) {
      Node* shape = viewShapeList(*node);
      if (shape == nullptr || !isWithin(modulePathOf(*node), module)) continue;
      if (lastInt(edit_, *shape) == width) {
        setIntInput(edit_, *shape, shape->inputs().size() - 1, padded_width);
      }
    }
  }

  // The projection's output is viewed as [batch, length, heads, head_dim]: the constant
  // head_dim in that shape becomes the padded one.
  void widenHeadSplit(const std::string& module, const Node& projection, int64_t head_dim,
                      int64_t padded) {
    for (const auto& use : projection.output()->uses()) {
      Node* shape = viewShapeList(*use.user);
      // A constant when traced, an int attribute (self.head_dim) when scripted.
      if (shape == nullptr || lastInt(edit_, *shape) != head_dim) continue;
      setIntInput(edit_, *shape, shape->inputs().size() - 1, padded);
      return;
    }
    throw UserError("pad_attention_heads: found no [..., heads, " + std::to_string(head_dim) +
                    "] view of " + modulePathOf(projection) + " in " + module);
  }

  GraphEdit& edit_;
  int64_t stick_;
  std::string module_;
  std::vector<std::pair<std::string, std::string>> roles_;  // child module -> role
  std::string rotary_;
  int64_t target_ = 0;
  std::map<std::string, AttentionWeights> attention_;
};

}  // namespace

void padAttentionHeads(const nlohmann::json& arguments, GraphEdit& edit,
                       const DeviceProfile& profile) {
  torch::NoGradGuard no_grad;
  if (!arguments.at("qkv").get<std::string>().empty()) {
    padFusedAttentionHeads(arguments, edit, profile);
    return;
  }
  HeadPadder(arguments, edit, profile).run();
}

}  // namespace stickler
