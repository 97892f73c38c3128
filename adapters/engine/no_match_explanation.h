// Why a rewrite's pattern matches nothing in a model: the closest partial matches, each with how
// far the pattern matched and where and why it diverged (an operator, a constant, an input count,
// a value used outside the match), so that an agent fixes the pattern instead of guessing.
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

struct PartialMatch {
  std::string anchor;    // the graph node the pattern's last operator was tried at, described
  int matched = 0;       // pattern operators that matched there
  int operators = 0;     // pattern operators in all
  std::string diverged;  // where and why matching stopped
  bool in_control_flow = false;  // the node sits in a prim::If / prim::Loop block
};

// How many partial matches an explanation gives.
constexpr size_t kPartialMatchesShown = 3;

// The best partial matches of `pattern` in `graph` (most operators matched first), or one entry
// saying the graph has no operator the pattern ends in. Matching follows LibTorch's subgraph
// matcher: operators by kind and input count, pattern parameters bind any value (the same one
// each time), constants by value, and values inside the match used only inside it.
std::vector<PartialMatch> closestPartialMatches(const torch::jit::Graph& pattern,
                                                const torch::jit::Graph& graph);

// "aten::mean in model.layers.0.input_layernorm: 1 of 2 operators matched; then ..." for a person.
std::string partialMatchText(const PartialMatch& match);

}  // namespace stickler
