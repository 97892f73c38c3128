// Applies a compiled pattern/replacement to a graph: every match of the pattern (that the
// condition accepts) is replaced by the replacement, whose nodes take the matched nodes'
// module path and source position.
#pragma once

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/rewrite_compiler.h"

namespace stickler {

struct RewriteCount {
  int matches = 0;
  int refused_by_condition = 0;
};

RewriteCount applyRewrite(const CompiledRewrite& rewrite, GraphEdit& edit,
                          const std::string& adapter_path);

}  // namespace stickler
