// pad_attention_heads: RoPE as a matmul needs head_dim/2 to fill whole sticks, so heads of 32
// or 64 values are zero-padded (Granite 3.3 2B: 64 -> 128, FACTS.md). Each half of a query or
// key head gets zeros after it, so rotate_half still swaps the model's own halves; the rotary
// frequencies get zero entries (cos 1, sin 0) for the padding, value heads get zeros at their
// end, and o_proj reads those positions with zero columns. Scores and outputs are the same sums
// with zero terms added.
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

// [heads * head_dim, ...] -> [heads * padded, ...], zeros after each half of each head.
at::Tensor padHalves(const at::Tensor& rows, int64_t head_dim, int64_t padded) {
  const at::Tensor values = rows.detach();
  std::vector<int64_t> split = {-1, 2, head_dim / 2};
  std::vector<int64_t> merged = {-1};
  for (int64_t d = 1; d < values.dim(); ++d) {
    split.push_back(values.size(d));
    merged.push_back(values.size(d));
  }
  // constant_pad_nd pads the last dimension first: move the half there, pad, move it back.
  at::Tensor halves = values.reshape(split).movedim(2, -1);
  halves = at::constant_pad_nd(halves, {0, (padded - head_dim) / 2}, 0).movedim(-1, 2);
  return halves.reshape(merged).contiguous();
}

// [heads * head_dim, ...] -> [heads * padded, ...], zeros at the end of each head.
at::Tensor padHeads(const at::Tensor& rows, int64_t head_dim, int64_t padded) {
  const at::Tensor values = rows.detach();
  std::vector<int64_t> split = {-1, head_dim};
  for (int64_t d = 1; d < values.dim(); ++d) split.push_back(values.size(d));
  at::Tensor heads = values.reshape(split).movedim(1, -1);
  heads = at::constant_pad_nd(heads, {0, padded - head_dim}, 0).movedim(-1, 1);
  std::vector<int64_t> merged = {-1};
  for (int64_t d = 1; d < values.dim(); ++d) merged.push_back(values.size(d));
  return heads.reshape(merged).contiguous();
}

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
    roles_ = {{arguments.at("q").get<std::string>(), "q"},
              {arguments.at("k").get<std::string>(), "k"},
              {arguments.at("v").get<std::string>(), "v"},
              {arguments.at("o").get<std::string>(), "o"}};
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
          if (endsWith(path, suffix))
            note(path.substr(0, path.size() - suffix.size()), role + "." + kind, node->output());
        }
      }
      const std::string suffix = "." + rotary_;
      if (endsWith(path, suffix)) {
        note(path.substr(0, path.size() - suffix.size()), "rotary", node->output());
      }
    }
  }

  static bool endsWith(const std::string& text, const std::string& suffix) {
    return text.size() > suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  }

  void note(const std::string& module, const std::string& role, Value* value) {
    if (!globMatch(module_, module)) return;
    auto tensor = edit_.constantOrWeight(value);
    if (!tensor || !tensor->isTensor()) return;
    attention_[module].reads[role].push_back(value);
    attention_[module].tensors[role] = tensor->toTensor();
  }

  void pad(const std::string& module, AttentionWeights& weights) {
    for (const char* role : {"q.weight", "k.weight", "v.weight", "o.weight", "rotary"}) {
      if (!weights.tensors.count(role)) {
        throw UserError("pad_attention_heads: " + module + " has no " + role +
                        " (check the q, k, v, o and rotary arguments)");
      }
    }
    const int64_t head_dim = weights.tensors["rotary"].numel() * 2;
    int64_t padded = target_;
    if (padded == 0) padded = (head_dim / 2 + stick_ - 1) / stick_ * 2 * stick_;  // auto
    if (padded % (2 * stick_) != 0 || padded < head_dim) {
      throw UserError("pad_attention_heads: head_dim " + std::to_string(padded) +
                      " must be at least " + std::to_string(head_dim) +
                      " and a multiple of two sticks (" + std::to_string(2 * stick_) + ")");
    }
    if (padded == head_dim) return;
    // The q, k and v projections, found before their weights are replaced.
    std::vector<Node*> projections;
    for (const char* role : {"q.weight", "k.weight", "v.weight"}) {
      for (const Value* read : weights.reads[role]) {
        for (const auto& use : read->uses()) {
          if (use.user->kind() == aten::linear) projections.push_back(use.user);
        }
      }
    }
    for (auto& [role, tensor] : weights.tensors) {
      at::Tensor replacement;
      if (role == "rotary") {
        replacement = at::constant_pad_nd(tensor.detach(), {0, (padded - head_dim) / 2}, 0);
      } else if (role == "q.weight" || role == "q.bias" || role == "k.weight" || role == "k.bias") {
        replacement = padHalves(tensor, head_dim, padded);
      } else if (role == "v.weight" || role == "v.bias") {
        replacement = padHeads(tensor, head_dim, padded);
      } else if (role == "o.weight") {
        replacement = padHeads(tensor.detach().t(), head_dim, padded).t().contiguous();
      } else {
        continue;  // o.bias: the output size does not change
      }
      for (Value* read : weights.reads[role]) replaceRead(read, replacement);
    }
    for (Node* projection : projections) widenHeadSplit(module, *projection, head_dim, padded);
    ++edit_.change().rewrites;
  }

  void replaceRead(Value* read, const at::Tensor& tensor) {
    Node* reader = read->node();
    torch::jit::WithInsertPoint insert_point(reader);
    torch::jit::WithCurrentScope scope(edit_.graph(), reader->scope());
    Value* constant = edit_.graph().insertConstant(tensor);
    read->replaceAllUsesWith(constant);
    edit_.destroyIfUnused(reader);
  }

  // The projection's output is viewed as [batch, length, heads, head_dim]: the constant
  // head_dim in that shape becomes the padded one.
  void widenHeadSplit(const std::string& module, const Node& projection, int64_t head_dim,
                      int64_t padded) {
    for (const auto& use : projection.output()->uses()) {
      const Node* view = use.user;
      if (view->kind() != aten::view && view->kind() != aten::reshape) continue;
      Node* shape = view->input(1)->node();
      if (shape->kind() != prim::ListConstruct || shape->inputs().empty()) continue;
      const size_t last = shape->inputs().size() - 1;
      // A constant when traced, an int attribute (self.head_dim) when scripted.
      auto size = edit_.constantOrWeight(shape->input(last));
      if (!size || !size->isInt() || size->toInt() != head_dim) continue;
      torch::jit::WithInsertPoint insert_point(shape);
      shape->replaceInput(last, edit_.graph().insertConstant(padded));
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
  HeadPadder(arguments, edit, profile).run();
}

}  // namespace stickler
