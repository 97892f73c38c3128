// Applies a compiled pattern/replacement to a graph: every match of the pattern (that the
// condition accepts) is replaced by the replacement, whose nodes take the matched nodes'
// module path and source position.
#pragma once

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/rewrite_compiler.h"

namespace stickler {

struct RewriteCount {
  int refused_by_condition = 0;  // the rewrites made are counted in the edit's change
};

RewriteCount applyRewrite(const CompiledRewrite& rewrite, GraphEdit& edit,
                          const std::string& adapter_path);

}  // namespace stickler
