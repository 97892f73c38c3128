// Applies a compiled pattern/replacement to a graph: every match of the pattern (that the
// condition accepts) is replaced by the replacement, whose nodes take the matched nodes'
// module path and source position.
#pragma once

#include <string>
#include <vector>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/rewrite_compiler.h"

namespace stickler {

// How many turned-down matches a result describes: enough to see what the condition saw.
constexpr size_t kTurnedDownShown = 3;

struct RewriteCount {
  int refused_by_condition = 0;  // the rewrites made are counted in the edit's change
  // The first kTurnedDownShown matches the condition turned down: where, and the values it
  // was called with ("aten::view in model.layers.0.mlp: condition(x=Tensor(float32, [2, 8]),
  // sizes=[2, 8, 4, 2]) returned False").
  std::vector<std::string> turned_down;
  // When nothing matches: the closest partial matches, for a person (no_match_explanation.h).
  std::vector<std::string> closest;
};

// `rewrite` compiled from `adapter`, whose condition runs in a sandbox worker unless adapter code
// runs here (adapter_sandbox.h).
RewriteCount applyRewrite(const CompiledRewrite& rewrite, GraphEdit& edit,
                          const AdapterFile& adapter);

}  // namespace stickler
