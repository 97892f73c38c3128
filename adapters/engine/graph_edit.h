// Editing a copy of a loaded model's graph while still reading what the original recorded:
// the shapes, dtypes and constants every value had on the example inputs.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <torch/script.h>

#include "adapters/engine/graph_change.h"
#include "simulator/graph/loaded_model.h"

namespace stickler {

class GraphEdit {
 public:
  explicit GraphEdit(const LoadedModel& model);

  torch::jit::Graph& graph() { return *graph_; }
  std::shared_ptr<torch::jit::Graph> takeGraph() { return graph_; }
  const LoadedModel& model() const { return model_; }

  // The copy's value for a value of the model's own graph (as observers of its runs see them).
  torch::jit::Value* copyOf(const torch::jit::Value* original) const;
  // The node of the model's own graph that a live node of the copy was copied from; nullptr for
  // a node the edit created. Nodes are known by address, and a node the edit creates may take
  // the address of a copy it destroyed: the answer is checked to be the same operator in the
  // same module, and a new node that passes for the copy it replaced computes what that copy did.
  const torch::jit::Node* originalOf(const torch::jit::Node* copy) const;

  // What `value` (of the copy) was on the example inputs; nullopt for values created by the
  // edit or never reached.
  std::optional<ValueDesc> describe(const torch::jit::Value* value) const;
  // The value itself when it is a constant or a chain of attributes from `self` (a weight).
  std::optional<c10::IValue> constantOrWeight(const torch::jit::Value* value) const;

  // Records a node the edit inserted (in the scope of the nodes it replaces, so that it keeps
  // their module path) as added.
  void noteAdded(const torch::jit::Node* node);
  // Destroys `node` (its outputs must be unused) and records it as removed.
  void destroy(torch::jit::Node* node);
  // Whether `node` was destroyed by destroy() (a node created since at its address included).
  bool wasDestroyed(const torch::jit::Node* node) const { return destroyed_.count(node) > 0; }
  // Destroys `node` when nothing reads it and it has no side effects, then its producers the
  // same way: the constants and attribute reads an edit left dangling.
  void destroyIfUnused(torch::jit::Node* node);

  GraphChange& change() { return change_; }
  // The modules the adapted model keeps on the host: the model's own, and those placed there.
  std::vector<std::string>& hostModules() { return host_modules_; }

 private:
  const LoadedModel& model_;
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unordered_map<const torch::jit::Node*, const torch::jit::Node*> original_;  // copy -> model
  std::unordered_map<const torch::jit::Node*, torch::jit::Node*> copies_;          // model -> copy
  std::unordered_set<const torch::jit::Node*> destroyed_;
  GraphChange change_;
  std::vector<std::string> host_modules_;
};

// The subgraph matcher accepts no uses outside a match, constants included: a constant read
// by the match and by anything else would hide the match, and a pattern that reads one
// constant twice would match only graphs that share it the same way. Giving each use a
// constant of its own, in pattern and graph alike, makes matching depend on values only.
void giveEachUseItsOwnConstant(torch::jit::Graph& graph);

}  // namespace stickler
