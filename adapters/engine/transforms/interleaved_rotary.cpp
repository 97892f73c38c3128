#include "adapters/engine/transforms/interleaved_rotary.h"

#include <algorithm>
#include <limits>
#include <set>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/attention_structure.h"
#include "adapters/engine/transforms/head_padding.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

// The value a chain of whole slices (the `x[:, :, :` of `x[:, :, :, ::2]`) reads.
const Value* throughWholeSlices(const GraphEdit& edit, const Value* value) {
  while (value->node()->kind() == aten::slice) {
    const Node& slice = *value->node();
    const auto start = intInput(edit, slice, 2);
    const auto end = intInput(edit, slice, 3);
    const auto step = intInput(edit, slice, 4);
    if (start != 0 || step != 1 || end != std::numeric_limits<int64_t>::max()) break;
    value = slice.input(0);
  }
  return value;
}

// A slice of every second value along the last dimension, from `first` to the end.
bool isEverySecond(const GraphEdit& edit, const Node& node, int64_t first) {
  if (node.kind() != aten::slice || !namesLastDim(edit, node, 1, node.input(0))) return false;
  const auto start = intInput(edit, node, 2);
  const auto end = intInput(edit, node, 3);
  const auto step = intInput(edit, node, 4);
  const auto described = edit.describe(node.input(0));
  return start == first && step == 2 && end && described && !described->shape.empty() &&
         *end >= described->shape.back();
}

// rotate_every_two's stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2); nullopt otherwise.
std::optional<PairRotation> pairRotationAt(GraphEdit& edit, Node& stack) {
  const Node* list = stack.input(0)->node();
  if (list->kind() != prim::ListConstruct || list->inputs().size() != 2) return std::nullopt;
  if (!namesLastDim(edit, stack, 1, list->input(0), 1)) return std::nullopt;
  if (stack.output()->uses().size() != 1) return std::nullopt;
  Node* flatten = stack.output()->uses().front().user;
  const auto described = edit.describe(stack.output());
  if (flatten->kind() != aten::flatten || !described) return std::nullopt;
  const auto rank = static_cast<int64_t>(described->shape.size());
  const auto from = intInput(edit, *flatten, 1);
  const auto to = intInput(edit, *flatten, 2);
  if (!from || !to || (*from != -2 && *from != rank - 2) || (*to != -1 && *to != rank - 1)) {
    return std::nullopt;
  }
  const Node* negation = list->input(0)->node();
  if (negation->kind() != aten::neg) return std::nullopt;
  Node* seconds = negation->input(0)->node();
  Node* firsts = list->input(1)->node();
  if (!isEverySecond(edit, *firsts, 0) || !isEverySecond(edit, *seconds, 1)) return std::nullopt;
  const Value* rotated = throughWholeSlices(edit, firsts->input(0));
  if (rotated != throughWholeSlices(edit, seconds->input(0))) return std::nullopt;
  return PairRotation{const_cast<Value*>(rotated), firsts, seconds, &stack, flatten};
}

}  // namespace

std::set<const Value*> computedFromProjections(const torch::jit::Graph& graph) {
  std::set<const Value*> activations;
  for (const Node* node : allNodes(graph)) {
    const auto inputs = node->inputs();
    const bool computed =
        isProjection(*node) || std::any_of(inputs.begin(), inputs.end(), [&](const Value* input) {
          return activations.count(input) > 0;
        });
    if (computed) activations.insert(node->outputs().begin(), node->outputs().end());
  }
  return activations;
}

std::vector<Node*> tableReaders(const std::vector<Value*>& tables, c10::Symbol kind,
                                const std::set<const Value*>& activations) {
  std::vector<Node*> readers;
  std::set<const Node*> seen;
  std::vector<const Value*> pending(tables.begin(), tables.end());
  while (!pending.empty()) {
    const Value* value = pending.back();
    pending.pop_back();
    for (const auto& use : value->uses()) {
      Node* user = use.user;
      if (!seen.insert(user).second) continue;
      const auto inputs = user->inputs();
      if (std::any_of(inputs.begin(), inputs.end(),
                      [&](const Value* input) { return activations.count(input) > 0; })) {
        continue;  // the table meets the heads
      }
      if (user->kind() == kind) readers.push_back(user);
      for (const Value* output : user->outputs()) pending.push_back(output);
    }
  }
  return readers;
}

InterleavedRotations findInterleavedRotations(GraphEdit& edit, const std::string& module,
                                              const std::vector<Value*>& tables,
                                              const std::set<const Value*>& activations) {
  InterleavedRotations found;
  std::set<const Node*> recognised;
  for (const Node* node : allNodes(edit.graph())) {
    if (node->kind() != aten::stack || !isWithin(modulePathOf(*node), module)) continue;
    // this edit owns the graph
    if (auto rotation = pairRotationAt(edit, *const_cast<Node*>(node))) {
      recognised.insert(rotation->firsts);
      recognised.insert(rotation->seconds);
      found.rotations.push_back(*rotation);
    }
  }
  for (const Node* node : allNodes(edit.graph())) {
    if (node->kind() != aten::slice || recognised.count(node) ||
        !isWithin(modulePathOf(*node), module) || !namesLastDim(edit, *node, 1, node->input(0))) {
      continue;
    }
    const auto step = intInput(edit, *node, 4);
    if (step && *step != 1) found.unrecognised.push_back(const_cast<Node*>(node));
  }
  for (Node* repeat : tableReaders(tables, aten::repeat_interleave, activations)) {
    if (repeat->inputs().size() >= 3 && intInput(edit, *repeat, 1) == 2 &&
        namesLastDim(edit, *repeat, 2, repeat->input(0))) {
      found.repeats.push_back(repeat);
    }
  }
  return found;
}

std::vector<int64_t> deinterleavedPositions(int64_t head_dim, int64_t rotated) {
  std::vector<int64_t> at(head_dim);
  for (int64_t i = 0; i < head_dim; ++i) {
    at[i] = i >= rotated ? i : i % 2 == 0 ? i / 2 : rotated / 2 + i / 2;
  }
  return at;
}

at::Tensor deinterleaveHeads(const at::Tensor& tensor, int64_t dim, int64_t head_dim,
                             int64_t rotated) {
  const std::vector<int64_t> at = deinterleavedPositions(head_dim, rotated);
  const int64_t size = tensor.size(dim);
  std::vector<int64_t> order(size);
  for (int64_t head = 0; head < size; head += head_dim) {
    for (int64_t i = 0; i < head_dim; ++i) order[head + at[i]] = head + i;
  }
  return tensor.detach().index_select(dim, at::tensor(order, at::kLong)).contiguous();
}

void rewriteAsHalves(GraphEdit& edit, const InterleavedRotations& found, int64_t half) {
  torch::jit::Graph& graph = edit.graph();
  const auto replace = [&](Node* old, Value* list, int64_t dim) {
    torch::jit::WithInsertPoint insert_point(old);
    torch::jit::WithCurrentScope scope(graph, old->scope());
    Value* cat = graph.insert(aten::cat, {list, dim});
    cat->node()->setSourceRange(old->sourceRange());
    edit.noteAdded(cat->node());
    old->output()->replaceAllUsesWith(cat);
  };
  for (const PairRotation& rotation : found.rotations) {
    setIntInput(edit, *rotation.firsts, 2, 0);
    setIntInput(edit, *rotation.firsts, 3, half);
    setIntInput(edit, *rotation.firsts, 4, 1);
    setIntInput(edit, *rotation.seconds, 2, half);
    setIntInput(edit, *rotation.seconds, 3, 2 * half);
    setIntInput(edit, *rotation.seconds, 4, 1);
    // stack((-x2, x1), -1).flatten(-2) of the pairs is cat((-x2, x1), -1) of the halves.
    replace(rotation.flatten, rotation.stack->input(0), -1);
    edit.destroy(rotation.flatten);
    edit.destroy(rotation.stack);
  }
  for (Node* repeat : found.repeats) {
    Value* list = nullptr;
    {
      torch::jit::WithInsertPoint insert_point(repeat);
      torch::jit::WithCurrentScope scope(graph, repeat->scope());
      list = graph
                 .insertNode(
                     graph.createList(c10::TensorType::get(), {repeat->input(0), repeat->input(0)}))
                 ->output();
      list->node()->setSourceRange(repeat->sourceRange());
    }
    replace(repeat, list, -1);
    edit.destroy(repeat);
  }
}

}  // namespace stickler
