// A graph's structure in one string: every node in execution order, with its operator, its
// module path and how many values it takes and gives. A model host checks that the model it
// made from a recipe is node for node the caller's, so that where a run stopped (a node's
// position) names the same node on both sides.
#pragma once

#include <string>

namespace torch::jit {
struct Graph;
}

namespace stickler {

std::string graphFingerprint(const torch::jit::Graph& graph);

}  // namespace stickler
