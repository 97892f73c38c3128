// pad_intermediate_size: an MLP whose intermediate size is not a whole number of sticks leaves
// both of its linear layers misaligned (the up and gate projections' outputs, the down
// projection's inputs). The MLP is found by what it computes: a linear layer whose input comes,
// through elementwise operators only (the activation, a gate's product, casts), from linear
// layers of that many outputs, whose outputs go nowhere else. Their weights and biases get zero
// rows up to whole sticks and the down projection zero columns: whatever the activation makes of
// a padded zero, the down projection multiplies it by zero, so every output is the same sum with
// zero terms added. Gated (SwiGLU: gate_proj, up_proj, down_proj; Mixtral's w1, w3, w2; Phi-3's
// gate_up_proj chunked in two) and ungated (BERT's intermediate.dense and output.dense, T5's wi
// and wo) MLPs alike.
#include <algorithm>
#include <set>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/head_padding.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

// Operators that act on each value alone (or on each value and a scalar): the padding passes
// through them position by position.
bool isElementwise(const Node& node) {
  static const std::set<c10::Symbol> kinds = {
      aten::gelu, aten::silu, aten::relu, aten::sigmoid, aten::tanh, aten::mul, aten::add,
      aten::sub, aten::div, aten::pow, aten::neg, aten::to, aten::dropout, aten::erf, aten::exp,
      aten::clamp, aten::leaky_relu, aten::softplus, aten::square, aten::sqrt, aten::hardtanh,
      aten::type_as, aten::contiguous, aten::mul_, aten::add_, aten::relu_, aten::gelu_,
      aten::dropout_,
      // A scripted activation module inlines as a branch per `inplace`, one of them in place.
      aten::silu_, aten::sigmoid_, aten::tanh_, aten::hardtanh_, aten::leaky_relu_, aten::clamp_};
  return kinds.count(node.kind()) > 0;
}

// A tensor a node reads besides the activations: a scalar constant is fine; anything else (a
// learned per-channel scale) would need padding too, so the MLP is left as it is.
bool isScalarConstant(const GraphEdit& edit, const Value* value) {
  if (value->type()->kind() != c10::TypeKind::TensorType) return true;
  const auto constant = edit.constantOrWeight(value);
  return constant && constant->isTensor() && constant->toTensor().numel() == 1;
}

struct FoundMlp {
  Node* down = nullptr;
  std::vector<Node*> up;  // the up and gate projections
  int64_t size = 0;       // the intermediate size
  // Those that are the gate and up projections in one, chunked in two (Phi-3's gate_up_proj).
  std::set<const Node*> fused;
};

// `chunk(2, dim=-1)` of a value: two halves along the last dimension.
bool isChunkInTwo(const GraphEdit& edit, const Node& node) {
  return node.kind() == aten::chunk && node.inputs().size() == 3 && intInput(edit, node, 1) == 2 &&
         namesLastDim(edit, node, 2, node.input(0));
}

// The linear layers feeding `down` through elementwise operators only; none when anything else
// feeds it (a view, a graph input, a per-channel weight).
std::optional<FoundMlp> mlpEndingIn(GraphEdit& edit, Node* down) {
  FoundMlp mlp;
  mlp.down = down;
  std::set<const Node*> region;  // the elementwise nodes between
  std::vector<const Value*> pending = {down->input(0)};
  while (!pending.empty()) {
    const Value* value = pending.back();
    pending.pop_back();
    Node* node = const_cast<Node*>(value->node());  // this edit owns the graph
    if (node->kind() == aten::linear) {
      if (std::find(mlp.up.begin(), mlp.up.end(), node) == mlp.up.end()) mlp.up.push_back(node);
      continue;
    }
    // A scripted dropout inlines as a branch per `inplace`: the value is what either branch
    // returns.
    if (node->kind() == prim::If) {
      if (!region.insert(node).second) continue;
      const auto outputs = node->outputs();
      const size_t offset = std::find(outputs.begin(), outputs.end(), value) - outputs.begin();
      for (const torch::jit::Block* block : node->blocks()) {
        pending.push_back(block->outputs()[offset]);
      }
      continue;
    }
    // A fused gate and up projection, chunked in two: each half is one of them. Padding each
    // half (padHeadsAlong with the intermediate size) keeps the chunk's halves equal.
    if (node->kind() == prim::ListUnpack) {
      Node* chunk = node->input()->node();
      if (!isChunkInTwo(edit, *chunk) || chunk->input(0)->node()->kind() != aten::linear) {
        return std::nullopt;
      }
      region.insert(node);
      region.insert(chunk);
      Node* fused = chunk->input(0)->node();
      if (std::find(mlp.up.begin(), mlp.up.end(), fused) == mlp.up.end()) mlp.up.push_back(fused);
      mlp.fused.insert(fused);
      continue;
    }
    if (!isElementwise(*node)) return std::nullopt;
    if (!region.insert(node).second) continue;
    for (const Value* input : node->inputs()) {
      if (input->type()->kind() != c10::TypeKind::TensorType) continue;
      const Node* producer = input->node();
      if (producer->kind() == prim::Constant || producer->kind() == prim::GetAttr) {
        if (!isScalarConstant(edit, input)) return std::nullopt;
        continue;
      }
      pending.push_back(input);
    }
  }
  if (mlp.up.empty()) return std::nullopt;
  // What the up projections compute goes to the down projection and nowhere else.
  for (const Node* up : mlp.up) {
    std::vector<const Value*> outputs = {up->output()};
    while (!outputs.empty()) {
      const Value* value = outputs.back();
      outputs.pop_back();
      for (const auto& use : value->uses()) {
        if (use.user == down) continue;
        if (use.user->kind() == prim::Return) {  // a branch's result: the branch node's output
          const Node* owner = use.user->owningBlock()->owningNode();
          if (owner == nullptr || !region.count(owner)) return std::nullopt;
          outputs.push_back(owner->output(use.offset));
          continue;
        }
        if (!region.count(use.user)) return std::nullopt;
        for (const Value* output : use.user->outputs()) outputs.push_back(output);
      }
    }
  }
  const auto shape = edit.describe(down->input(0));
  if (!shape || shape->shape.empty()) return std::nullopt;
  mlp.size = shape->shape.back();
  for (const Node* up : mlp.up) {
    const auto weight = edit.constantOrWeight(up->input(1));
    const int64_t rows = mlp.fused.count(up) ? 2 * mlp.size : mlp.size;
    if (!weight || !weight->isTensor() || weight->toTensor().size(0) != rows) {
      return std::nullopt;
    }
  }
  return mlp;
}

at::Tensor tensorOf(const GraphEdit& edit, const Value* read) {
  const auto value = edit.constantOrWeight(read);
  if (!value || !value->isTensor()) {
    throw UserError("pad_intermediate_size: " + modulePathOf(*read->node()) +
                    " reads a weight that is not a tensor of the model");
  }
  return value->toTensor();
}

}  // namespace

void padIntermediateSize(const nlohmann::json& arguments, GraphEdit& edit,
                         const DeviceProfile& profile) {
  torch::NoGradGuard no_grad;
  const std::string module = arguments.at("module");
  const int64_t stick = profile.stickElements();
  std::vector<FoundMlp> found;
  for (const Node* node : allNodes(edit.graph())) {
    if (node->kind() != aten::linear || !globMatch(module, modulePathOf(*node))) continue;
    if (auto mlp = mlpEndingIn(edit, const_cast<Node*>(node))) found.push_back(std::move(*mlp));
  }
  for (const FoundMlp& mlp : found) {
    int64_t padded = arguments.at("size");
    if (padded == 0) padded = (mlp.size + stick - 1) / stick * stick;
    if (padded < mlp.size || padded % stick != 0) {
      throw UserError("pad_intermediate_size: size " + std::to_string(padded) +
                      " must be at least " + std::to_string(mlp.size) +
                      " and a whole number of sticks (" + std::to_string(stick) + " values)");
    }
    if (padded == mlp.size) continue;  // whole sticks already: nothing to do here
    // Read before any is replaced: one weight read may feed more than one projection.
    std::vector<std::pair<Value*, at::Tensor>> replacements;
    for (const Node* up : mlp.up) {
      replacements.emplace_back(up->input(1),
                                padHeadsAlong(tensorOf(edit, up->input(1)), 0, mlp.size, padded));
      if (up->input(2)->type()->kind() != c10::TypeKind::NoneType) {
        replacements.emplace_back(up->input(2),
                                  padHeads(tensorOf(edit, up->input(2)), mlp.size, padded));
      }
    }
    Value* down_weight = mlp.down->input(1);
    replacements.emplace_back(down_weight,
                              padHeadsAlong(tensorOf(edit, down_weight), 1, mlp.size, padded));
    std::set<const Value*> replaced;
    for (auto& [read, tensor] : replacements) {
      if (replaced.insert(read).second) replaceWeightRead(edit, read, tensor);
    }
    ++edit.change().rewrites;
  }
}

}  // namespace stickler
