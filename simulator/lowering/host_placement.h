// Single nodes an adapter placed on the host (build_masks_on_host): they run on the CPU in
// every device run, whatever the placement says. The mark is an attribute of the node, so it
// travels with copies of the graph and leaves with a node a later rewrite replaces.
#pragma once

#include <cstdint>

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace stickler {

bool placedOnHost(const torch::jit::Node& node);
void placeOnHost(torch::jit::Node& node);
int64_t countPlacedOnHost(const torch::jit::Graph& graph);

}  // namespace stickler
