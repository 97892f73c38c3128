#include "adapters/engine/graph_edit.h"

#include <unordered_set>

#include "simulator/graph/module_inliner.h"

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;

GraphEdit::GraphEdit(const LoadedModel& model)
    : model_(model), graph_(model.graph->copy()), host_modules_(model.host_modules) {
  // Graph::copy keeps the order of nodes, so walking both graphs pairs each copy with its
  // original, whose records say what it saw.
  const auto copies = allNodes(*graph_);
  const auto originals = allNodes(*model.graph);
  for (size_t i = 0; i < copies.size() && i < originals.size(); ++i) {
    original_[copies[i]] = originals[i];
    copies_[originals[i]] = const_cast<Node*>(copies[i]);
  }
}

Value* GraphEdit::copyOf(const Value* original) const {
  const Node* producer = original->node();
  if (producer == model_.graph->param_node()) return graph_->inputs().at(original->offset());
  auto copy = copies_.find(producer);
  return copy == copies_.end() ? nullptr : copy->second->output(original->offset());
}

const Node* GraphEdit::originalOf(const Node* copy) const {
  auto found = original_.find(copy);
  if (found == original_.end()) return nullptr;
  const Node* original = found->second;
  const bool same = copy->kind() == original->kind() &&
                    copy->inputs().size() == original->inputs().size() &&
                    copy->outputs().size() == original->outputs().size() &&
                    copy->blocks().size() == original->blocks().size() &&
                    modulePathOf(*copy) == modulePathOf(*original);
  return same ? original : nullptr;
}

std::optional<ValueDesc> GraphEdit::describe(const Value* value) const {
  const Node* producer = value->node();
  if (producer->kind() == torch::jit::prim::Param) {
    const size_t index = value->offset();
    if (producer == graph_->param_node() && index >= 1 &&
        index - 1 < model_.example_inputs.size()) {
      return describeValue(model_.example_inputs[index - 1]);
    }
    return std::nullopt;
  }
  if (auto constant = constantOrWeight(value)) return describeValue(*constant);
  const Node* original = originalOf(producer);
  if (original == nullptr) return std::nullopt;
  auto record = model_.records.find(original);
  if (record == model_.records.end()) return std::nullopt;
  if (value->offset() >= record->second.outputs.size()) return std::nullopt;
  return record->second.outputs[value->offset()];
}

std::optional<c10::IValue> GraphEdit::constantOrWeight(const Value* value) const {
  if (auto constant = torch::jit::toIValue(value)) return constant;
  return resolveAttribute(value, graph_->inputs().at(0), c10::IValue(model_.module._ivalue()));
}

void GraphEdit::noteAdded(const Node* node) {
  change_.added.push_back({node->kind().toQualString(), modulePathOf(*node)});
}

void GraphEdit::destroy(Node* node) {
  change_.removed.push_back({node->kind().toQualString(), modulePathOf(*node)});
  destroyed_.insert(node);
  node->destroy();
}

void GraphEdit::destroyIfUnused(Node* node) {
  // A work list rather than recursion: a producer can be reached twice (cat(x, x), or through
  // a node that is destroyed first), and must not be touched once destroyed.
  std::vector<Node*> work = {node};
  std::unordered_set<Node*> destroyed;
  while (!work.empty()) {
    Node* candidate = work.back();
    work.pop_back();
    if (destroyed.count(candidate)) continue;
    const auto kind = candidate->kind();
    if (kind == torch::jit::prim::Param || kind == torch::jit::prim::Return ||
        candidate->hasSideEffects()) {
      continue;
    }
    bool used = false;
    for (const Value* output : candidate->outputs()) used = used || output->hasUses();
    if (used) continue;
    for (Value* input : candidate->inputs()) work.push_back(input->node());
    // Constants and attribute reads are not operators a reviewer counts.
    if (kind == torch::jit::prim::Constant || kind == torch::jit::prim::GetAttr) {
      candidate->destroy();
    } else {
      destroy(candidate);
    }
    destroyed.insert(candidate);
  }
}

void giveEachUseItsOwnConstant(torch::jit::Graph& graph) {
  for (const Node* shared : allNodes(graph)) {
    if (shared->kind() != torch::jit::prim::Constant || shared->outputs().size() != 1) continue;
    const auto uses = shared->output()->uses();
    // The first use keeps the constant unless it sits in another block: a match never spans
    // blocks, and graphs pool constants at the top, far from the prim::If or Loop body using them.
    const bool first_is_near = uses.empty() || uses[0].user->owningBlock() == shared->owningBlock();
    for (size_t i = first_is_near ? 1 : 0; i < uses.size(); ++i) {
      Node* copy = graph.createClone(const_cast<Node*>(shared), [](Value* value) { return value; });
      copy->insertBefore(uses[i].user);
      uses[i].user->replaceInput(uses[i].offset, copy->output());
    }
  }
}

}  // namespace stickler
