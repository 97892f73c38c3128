// What an adaptation did to a graph, node by node: the record an apply returns so that a
// reviewer sees exactly which operators left and which came in, and in which modules.
#pragma once

#include <string>
#include <vector>

namespace stickler {

struct ChangedNode {
  std::string op;      // "aten::pow"
  std::string module;  // its module path, "" for the root module
};

struct GraphChange {
  std::vector<ChangedNode> removed;
  std::vector<ChangedNode> added;
  std::vector<std::string> placed_on_host;  // modules moved to the host (run_on_host)
  std::vector<ChangedNode> nodes_on_host;   // single operators moved there (build_masks_on_host)
  int rewrites = 0;                         // matches rewritten, or places a transform changed
  bool fixes_shapes = false;  // constants computed for the example inputs' shapes (tables)
  // Operators a rewrite's replacement inserted and that were evaluated once instead
  // (fixed_value_folding.h): they are in neither `added` nor the graph.
  int folded = 0;
  // Sizes a replacement read that could not be folded, and why ("aten::size in model.layers.1
  // reads a shape the model card does not fix: aten::nonzero in ... gives a shape that depends
  // on the data; ...").
  std::vector<std::string> not_folded;

  bool empty() const { return rewrites == 0; }
};

}  // namespace stickler
