// Folding what a rewrite inserted that depends only on constants, weights and the shapes the
// model is compiled for: a replacement that builds a permutation matrix with arange, or pads a
// weight, computes it once here instead of on every forward (and instead of CPU fallbacks).
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "adapters/engine/graph_edit.h"

namespace stickler {

struct FoldResult {
  int folded = 0;  // operators evaluated and replaced by their value
  // A folded value read a size of a tensor of the model (aten::size): it holds for the input
  // shapes of the model card, the shapes Spyre compiles the model for, and no others.
  bool fixed_shapes = false;
  std::unordered_set<const torch::jit::Node*> destroyed;  // of `nodes`, those folded away
  // Sizes of model tensors a replacement read that the card does not fix, each with the
  // operator upstream that makes it so (at most kNotFoldedShown, distinct).
  std::vector<std::string> not_folded;
};

constexpr size_t kNotFoldedShown = 3;

// Evaluates the operators of `nodes` (in topological order: what replacements inserted) whose
// inputs are known: constants, weights, values folded before, and sizes of model tensors whose
// shape does not depend on the data (recorded once, outside loops and conditionals, with no
// nonzero-like operator upstream). Each evaluated operator is replaced by the constant it
// computed, except lists and tuples, which stay built from their (folded) elements as graphs
// and patterns compiled from code hold them; a value no constant can hold stays computed.
// A draft's replacement is folded here only after its trial folded it in a sandbox worker
// (adapter_sandbox.h).
FoldResult foldFixedValues(GraphEdit& edit, const std::vector<torch::jit::Node*>& nodes);

}  // namespace stickler
