// pad_to_sticks: a linear layer whose output size is not a whole number of sticks (or whose
// per-core slice overflows the span) gets zero rows appended to its weight and bias; the
// padded result is sliced back to the original size, so every consumer sees the same values.
// The layers are chosen by module path, by what their outputs become, or both: the logits (what
// the model returns, whatever the projection is called: lm_head, embed_out, a head tied to the
// token embedding) and a router's expert scores (what top-k chooses from).
#include <set>
#include <sstream>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/shared_constants.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/device/core_span.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

at::Tensor withZeroRows(const at::Tensor& tensor, int64_t rows) {
  std::vector<int64_t> shape = tensor.sizes().vec();
  shape[0] = rows - tensor.size(0);
  const at::Tensor values = tensor.detach();
  return at::cat({values, at::zeros(shape, values.options())}, 0);
}

// The weight (and bias) of a linear node, read from the model.
struct LinearWeights {
  at::Tensor weight;
  std::optional<at::Tensor> bias;
};

std::optional<LinearWeights> linearWeights(const GraphEdit& edit, const Node& node) {
  auto weight = edit.constantOrWeight(node.input(1));
  if (!weight || !weight->isTensor() || weight->toTensor().dim() != 2) return std::nullopt;
  LinearWeights weights{weight->toTensor(), std::nullopt};
  auto bias = edit.constantOrWeight(node.input(2));
  if (!bias) return std::nullopt;  // a computed bias: not this transform's business
  if (bias->isTensor()) weights.bias = bias->toTensor();
  return weights;
}

// Operators that carry a value on without mixing its last dimension: logits returned through
// them (scaled, as Granite's are, or soft-capped with tanh) are still the logits.
bool passesValuesOn(const Node& node) {
  static const std::set<c10::Symbol> kinds = {
      aten::view,           aten::reshape,       aten::slice,        aten::select,  aten::to,
      aten::contiguous,     aten::squeeze,       aten::unsqueeze,    aten::flatten, aten::type_as,
      aten::detach,         aten::clone,         aten::div,          aten::mul,     aten::tanh,
      prim::TupleConstruct, prim::ListConstruct, prim::DictConstruct};
  return kinds.count(node.kind()) > 0;
}

// What scores pass through on their way to top-k: a softmax or sigmoid, casts, a scale.
bool passesScoresOn(const Node& node) {
  static const std::set<c10::Symbol> kinds = {
      aten::softmax,    aten::sigmoid, aten::to,  aten::view,    aten::reshape,
      aten::contiguous, aten::div,     aten::mul, aten::type_as, aten::log_softmax};
  return kinds.count(node.kind()) > 0;
}

// Whether `value` reaches a node `is_target` accepts, through nodes `passes` accepts only. A
// value a sub-block returns (a scripted F.softmax inlines as one branch per dtype) continues as
// the output of the node owning the block.
template <typename Passes, typename IsTarget>
bool reaches(const Value* value, Passes passes, IsTarget is_target) {
  std::set<const Value*> seen;
  std::vector<const Value*> pending = {value};
  while (!pending.empty()) {
    const Value* current = pending.back();
    pending.pop_back();
    if (!seen.insert(current).second) continue;
    for (const auto& use : current->uses()) {
      const Node* user = use.user;
      if (is_target(*user)) return true;
      if (user->kind() == prim::Return) {
        const Node* owner = user->owningBlock()->owningNode();
        if (owner != nullptr) pending.push_back(owner->output(use.offset));
        continue;
      }
      if (!passes(*user)) continue;
      for (const Value* output : user->outputs()) pending.push_back(output);
    }
  }
  return false;
}

// The roles a linear node's output plays: "logits" when the model returns it (through views,
// slices, casts and the tuples it returns), "router" when top-k chooses from it.
bool playsRole(const torch::jit::Graph& graph, const Node& linear, const std::string& role) {
  if (role == "logits") {
    const Node* returned = graph.return_node();
    return reaches(linear.output(), passesValuesOn,
                   [&](const Node& user) { return &user == returned; });
  }
  if (role == "router") {
    return reaches(linear.output(), passesScoresOn,
                   [](const Node& user) { return user.kind() == aten::topk; });
  }
  return role == "any";
}

// The roles of `role` ("logits|router"), each checked against those this transform knows.
std::vector<std::string> rolesOf(const std::string& role) {
  std::vector<std::string> roles;
  std::stringstream alternatives(role);
  for (std::string one; std::getline(alternatives, one, '|');) {
    if (one != "any" && one != "logits" && one != "router") {
      throw UserError("pad_to_sticks: unknown role '" + one +
                      "' (roles: any, logits, router; alternatives joined by |)");
    }
    roles.push_back(one);
  }
  if (roles.empty()) throw UserError("pad_to_sticks: role is empty (roles: any, logits, router)");
  return roles;
}

void padLinear(GraphEdit& edit, Node* linear, const LinearWeights& weights, int64_t padded) {
  torch::jit::Graph& graph = edit.graph();
  const int64_t outputs = weights.weight.size(0);
  Value* result = nullptr;
  {
    torch::jit::WithInsertPoint insert_point(linear);
    torch::jit::WithCurrentScope scope(graph, linear->scope());
    Value* weight = insertSharedConstant(graph, withZeroRows(weights.weight, padded));
    Value* bias = weights.bias ? insertSharedConstant(graph, withZeroRows(*weights.bias, padded))
                               : graph.insertConstant(c10::IValue());
    Value* padded_result = graph.insert(aten::linear, {linear->input(0), weight, bias});
    result = graph.insert(aten::slice, {padded_result, -1, 0, outputs, 1});
    for (Value* value : {weight, bias, padded_result, result}) {
      value->node()->setSourceRange(linear->sourceRange());
    }
    edit.noteAdded(padded_result->node());
    edit.noteAdded(result->node());
  }
  result->setType(linear->output()->type());
  linear->output()->replaceAllUsesWith(result);
  std::vector<Node*> producers = {linear->input(1)->node(), linear->input(2)->node()};
  edit.destroy(linear);
  for (Node* producer : producers) edit.destroyIfUnused(producer);
}

}  // namespace

int64_t paddedOutputSize(int64_t outputs, int64_t inputs, const DeviceProfile& profile) {
  const int64_t stick = profile.stickElements();
  const int64_t sticks = sticksThatFitSpan(outputs, inputs, stick, DeviceProfile::kBytesPerValue,
                                           profile.device.core_span_bytes);
  return sticks * stick;
}

void padToSticks(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile) {
  const std::string module = arguments.at("module");
  if (arguments.at("dim") != "out") {
    throw UserError(
        "pad_to_sticks: only dim=\"out\" can be padded (padding the input size "
        "would change the activations that feed it)");
  }
  const std::vector<std::string> roles = rolesOf(arguments.at("role"));
  std::vector<Node*> targets;
  for (const Node* node : allNodes(edit.graph())) {
    if (node->kind() != aten::linear || !globMatch(module, modulePathOf(*node))) continue;
    for (const std::string& role : roles) {
      if (!playsRole(edit.graph(), *node, role)) continue;
      targets.push_back(const_cast<Node*>(node));
      break;
    }
  }
  for (Node* linear : targets) {
    auto weights = linearWeights(edit, *linear);
    if (!weights) continue;
    const int64_t outputs = weights->weight.size(0);
    const int64_t padded = paddedOutputSize(outputs, weights->weight.size(1), profile);
    if (padded <= 0) {
      throw UserError(
          "pad_to_sticks: no stick count up to twice the need fits the per-core "
          "span for " +
          modulePathOf(*linear));
    }
    if (padded == outputs) continue;  // already whole sticks whose slices fit
    padLinear(edit, linear, *weights, padded);
    ++edit.change().rewrites;
  }
}

}  // namespace stickler
