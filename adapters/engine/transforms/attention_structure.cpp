#include "adapters/engine/transforms/attention_structure.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "adapters/engine/graph_edit.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

bool isWeightRead(const Value* value) {
  return value->node()->kind() == prim::GetAttr || value->node()->kind() == prim::Constant;
}

// W when `product` is `x @ W.T` with W a weight (Falcon's FalconLinear, and any model that
// writes a linear layer as a matmul with the transposed weight); null otherwise.
Value* transposedWeightOf(const Node& product) {
  if (product.kind() != aten::matmul) return nullptr;
  const Node* transpose = product.input(1)->node();
  static const c10::Symbol numpy_t = c10::Symbol::fromQualString("aten::numpy_T");
  bool transposed = transpose->kind() == numpy_t || transpose->kind() == aten::t;
  if (transpose->kind() == aten::transpose && transpose->inputs().size() == 3) {
    const auto first = torch::jit::toIValue(transpose->input(1));
    const auto second = torch::jit::toIValue(transpose->input(2));
    // A 2-D weight has two dimensions to swap, whichever way they are counted.
    transposed = first && second && first->isInt() && second->isInt() &&
                 (first->toInt() + 2) % 2 != (second->toInt() + 2) % 2;
  }
  if (!transposed || !isWeightRead(transpose->input(0))) return nullptr;
  return transpose->input(0);
}

// The `+ bias` after `x @ W.T`: the product's only reader, adding a weight to it.
Node* biasAddOf(const Node& projection) {
  if (transposedWeightOf(projection) == nullptr || projection.output()->uses().size() != 1) {
    return nullptr;
  }
  Node* add = projection.output()->uses().front().user;
  if (add->kind() != aten::add || add->inputs().size() != 3 ||
      add->input(0) != projection.output() || !isWeightRead(add->input(1))) {
    return nullptr;
  }
  const auto alpha = torch::jit::toIValue(add->input(2));
  return alpha && alpha->isInt() && alpha->toInt() == 1 ? add : nullptr;
}

bool isTensorType(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::TensorType;
}

// Whether a value carries tensor data (a tensor, or a list or tuple of them): the walks follow
// those, not the sizes, dtypes and devices a node also reads.
bool carriesTensors(const Value* value) {
  const c10::TypePtr& type = value->type();
  if (isTensorType(type)) return true;
  if (const auto list = type->cast<c10::ListType>()) return isTensorType(list->getElementType());
  if (const auto tuple = type->cast<c10::TupleType>()) {
    const auto elements = tuple->elements();
    return std::any_of(elements.begin(), elements.end(), isTensorType);
  }
  return false;
}

// The value a tuple element came from, when `value` is unpacked from a tuple built in the graph
// (a scripted helper's returned (q, k, v)): only that element is followed.
const Value* throughTuple(const Value* value) {
  const Node* node = value->node();
  if (node->kind() != prim::TupleUnpack || node->input()->node()->kind() != prim::TupleConstruct) {
    return value;
  }
  const auto outputs = node->outputs();
  const size_t index = std::find(outputs.begin(), outputs.end(), value) - outputs.begin();
  return throughTuple(node->input()->node()->input(index));
}

// The values an output of a prim::If may come from (each branch's result), for walks back
// through a scripted function's branches (F.softmax with and without dtype); empty otherwise.
std::vector<const Value*> branchResults(const Value* value) {
  const Node* node = value->node();
  if (node->kind() != prim::If) return {};
  const auto outputs = node->outputs();
  const size_t index = std::find(outputs.begin(), outputs.end(), value) - outputs.begin();
  std::vector<const Value*> results;
  for (const torch::jit::Block* block : node->blocks()) results.push_back(block->outputs()[index]);
  return results;
}

// What feeds `start`: the projections it is computed from (the walk stops at them), the rotary
// tables (1-D frequencies that reach it through cos or sin, or 2-D tables of sines and cosines
// gathered at the positions), and whether a negation lies on the way (rotate_half's -x2).
struct Upstream {
  std::vector<Node*> projections;
  std::vector<Value*> rotary;
  bool negated = false;
};

// How the walk back from the queries reached a value: through cos or sin (the angles), or
// through a gather at the positions (the table it reads is precomputed).
struct Reached {
  bool trigonometric = false;
  bool gathered = false;
  bool operator<(const Reached& other) const {
    return std::tie(trigonometric, gathered) < std::tie(other.trigonometric, other.gathered);
  }
};

// A lookup of rows by index (GPT-J's `torch.gather(embed_positions, 1, positions)`), whose
// first input is the table read.
bool isGather(const Node& node) {
  return node.kind() == aten::gather || node.kind() == aten::index ||
         node.kind() == aten::index_select || node.kind() == aten::embedding;
}

bool isRotaryTable(const at::Tensor& table, Reached reached) {
  if (!table.is_floating_point()) return false;
  return reached.trigonometric ? table.dim() == 1 : reached.gathered && table.dim() == 2;
}

Upstream upstreamOf(GraphEdit& edit, const Value* start) {
  Upstream found;
  std::set<std::pair<const Node*, Reached>> seen;
  std::vector<std::pair<const Value*, Reached>> pending = {{start, {}}};
  while (!pending.empty()) {
    auto [value, reached] = pending.back();
    pending.pop_back();
    value = throughTuple(value);
    Node* node = const_cast<Node*>(value->node());  // this edit owns the graph
    // Each output of a branch node is followed on its own (before `seen`, which is per node).
    if (node->kind() == prim::If) {
      for (const Value* result : branchResults(value)) pending.emplace_back(result, reached);
      continue;
    }
    if (!seen.insert({node, reached}).second) continue;
    if (isProjection(*node)) {
      if (std::find(found.projections.begin(), found.projections.end(), node) ==
          found.projections.end()) {
        found.projections.push_back(node);
      }
      continue;
    }
    if (node->kind() == prim::GetAttr || node->kind() == prim::Constant) {
      const auto table =
          reached.trigonometric || reached.gathered ? edit.constantOrWeight(value) : std::nullopt;
      if (table && table->isTensor() && isRotaryTable(table->toTensor(), reached) &&
          std::find(found.rotary.begin(), found.rotary.end(), value) == found.rotary.end()) {
        found.rotary.push_back(const_cast<Value*>(value));  // this edit owns the graph
      }
      continue;
    }
    if (node->kind() == prim::Param) continue;
    // A product met before cos or sin is another computation; after them it is the rotary
    // angles (frequencies times positions).
    if (isProduct(*node) && !reached.trigonometric) continue;
    found.negated = found.negated || node->kind() == aten::neg;
    Reached next = reached;
    next.trigonometric =
        reached.trigonometric || node->kind() == aten::cos || node->kind() == aten::sin;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Value* input = node->input(i);
      if (!carriesTensors(input)) continue;
      Reached through = next;
      through.gathered = next.gathered || (isGather(*node) && i == 0);
      pending.emplace_back(input, through);
    }
  }
  return found;
}

// The product of queries and keys a softmax normalizes (through scaling, masks and biases, casts);
// null when the softmax reads something else (a router's logits).
Node* scoresOf(const Node& softmax) {
  std::vector<Node*> products;
  std::set<const Node*> seen;
  std::vector<const Value*> pending = {softmax.input(0)};
  while (!pending.empty()) {
    const Value* value = throughTuple(pending.back());
    pending.pop_back();
    Node* node = const_cast<Node*>(value->node());  // this edit owns the graph
    if (node->kind() == prim::If) {
      for (const Value* result : branchResults(value)) pending.push_back(result);
      continue;
    }
    if (!seen.insert(node).second) continue;
    if (isProduct(*node)) {
      products.push_back(node);
      continue;
    }
    if (isProjection(*node)) return nullptr;
    if (node->kind() == prim::GetAttr || node->kind() == prim::Constant ||
        node->kind() == prim::Param) {
      continue;
    }
    for (const Value* input : node->inputs()) {
      if (carriesTensors(input)) pending.push_back(input);
    }
  }
  return products.size() == 1 ? products.front() : nullptr;
}

// The nodes `start` flows into, up to the first product or projection on each path: `stop`
// says which nodes end a path and are collected.
template <typename Stop>
std::vector<Node*> downstreamOf(const Value* start, Stop stop) {
  std::vector<Node*> found;
  std::set<const Node*> seen;
  std::vector<const Value*> pending = {start};
  while (!pending.empty()) {
    const Value* value = pending.back();
    pending.pop_back();
    for (const auto& use : value->uses()) {
      Node* user = use.user;
      if (!seen.insert(user).second) continue;
      if (stop(*user, use.offset)) {
        found.push_back(user);
        continue;
      }
      if (isProduct(*user) || isProjection(*user)) continue;
      if (user->kind() == prim::Return) {
        // A branch's result is the If's output (a scripted function's branches, inlined).
        const Node* owner = user->owningBlock()->owningNode();
        if (owner != nullptr && owner->kind() == prim::If) {
          pending.push_back(owner->outputs()[use.offset]);
        }
        continue;
      }
      for (const Value* output : user->outputs()) {
        if (carriesTensors(output)) pending.push_back(output);
      }
    }
  }
  return found;
}

std::string parentOf(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

// The longest dotted prefix the module paths share.
std::string commonModule(const std::vector<const Node*>& nodes) {
  std::string common = parentOf(modulePathOf(*nodes.front()));
  for (const Node* node : nodes) {
    const std::string path = parentOf(modulePathOf(*node));
    while (!common.empty() && path != common && path.rfind(common + ".", 0) != 0) {
      common = parentOf(common);
    }
  }
  return common;
}

}  // namespace

bool isProjection(const Node& node) {
  return node.kind() == aten::linear || node.kind() == aten::addmm ||
         transposedWeightOf(node) != nullptr;
}

bool isProduct(const Node& node) {
  return (node.kind() == aten::matmul || node.kind() == aten::bmm) && !isProjection(node);
}

torch::jit::Value* projectionWeight(const Node& projection) {
  if (Value* weight = transposedWeightOf(projection)) return weight;
  return projection.input(projection.kind() == aten::addmm ? 2 : 1);
}

torch::jit::Value* projectionBias(const Node& projection) {
  if (transposedWeightOf(projection) != nullptr) {
    const Node* add = biasAddOf(projection);
    return add == nullptr ? nullptr : add->input(1);
  }
  Value* bias = projection.input(projection.kind() == aten::addmm ? 0 : 2);
  return bias->type()->kind() == c10::TypeKind::NoneType ? nullptr : bias;
}

torch::jit::Value* projectionResult(const Node& projection) {
  Node* add = biasAddOf(projection);
  if (add != nullptr) return add->output();
  return const_cast<Value*>(projection.output());  // the edit owns the graph
}

int64_t projectionOutputDim(const Node& projection) {
  return projection.kind() == aten::addmm ? 1 : 0;
}

std::vector<FoundAttention> findAttention(GraphEdit& edit, std::vector<std::string>* left_out) {
  std::vector<FoundAttention> found;
  const auto leave = [&](const Node& softmax, const std::string& why) {
    if (left_out) left_out->push_back(modulePathOf(softmax) + ": " + why);
  };
  for (const Node* softmax : allNodes(edit.graph())) {
    if (softmax->kind() != aten::softmax) continue;
    Node* scores = scoresOf(*softmax);
    if (scores == nullptr) continue;  // not attention
    const std::vector<Node*> contexts = downstreamOf(
        softmax->output(),
        [](const Node& user, size_t offset) { return isProduct(user) && offset == 0; });
    if (contexts.size() != 1) continue;  // the probabilities weigh no values: not attention
    const Node* context = contexts.front();
    const Upstream queries = upstreamOf(edit, scores->input(0));
    const Upstream keys = upstreamOf(edit, scores->input(1));
    const Upstream values = upstreamOf(edit, context->input(1));
    if (queries.projections.size() != 1 || keys.projections.size() != 1 ||
        values.projections.size() != 1) {
      leave(*softmax, "its queries, keys and values do not each come from one projection");
      continue;
    }
    FoundAttention attention;
    attention.q = queries.projections.front();
    attention.k = keys.projections.front();
    attention.v = values.projections.front();
    // A softmax in each branch of a scripted F.softmax: the same attention twice.
    const auto same = [&](const FoundAttention& other) {
      return other.q == attention.q && other.k == attention.k && other.v == attention.v;
    };
    if (std::any_of(found.begin(), found.end(), same)) continue;
    const bool fused = attention.fused();
    if (!fused &&
        (attention.q == attention.k || attention.k == attention.v || attention.q == attention.v)) {
      leave(*softmax, "two of its queries, keys and values share a projection, the third not");
      continue;
    }
    const std::vector<Node*> outputs = downstreamOf(
        context->output(), [](const Node& user, size_t) { return isProjection(user); });
    if (outputs.size() > 1) {
      leave(*softmax, "its merged heads feed " + std::to_string(outputs.size()) + " projections");
      continue;
    }
    if (!outputs.empty()) attention.o = outputs.front();
    const auto shape = edit.describe(scores->input(0));
    if (!shape || shape->shape.size() < 4) {
      leave(*softmax, "its queries are not [..., heads, length, head_dim]");
      continue;
    }
    const size_t rank = shape->shape.size();
    attention.heads = shape->shape[rank - 3];
    attention.head_dim = shape->shape[rank - 1];
    attention.rotary = queries.rotary;
    for (Value* table : keys.rotary) {
      if (std::find(attention.rotary.begin(), attention.rotary.end(), table) ==
          attention.rotary.end()) {
        attention.rotary.push_back(table);
      }
    }
    if (attention.rotary.empty() && queries.negated && keys.negated) {
      leave(*softmax,
            "its queries and keys are rotated with no rotary frequencies left to find (tables "
            "precomputed before the heads were padded?)");
      continue;
    }
    std::vector<const Node*> projections = {attention.q, attention.k, attention.v};
    if (attention.o) projections.push_back(attention.o);
    attention.module = commonModule(projections);
    found.push_back(std::move(attention));
  }
  return found;
}

}  // namespace stickler
