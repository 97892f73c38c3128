#pragma once

// The context the benchmarks call operations in, as an MCP session would: models stay loaded,
// adapter stacks and the catalog's stackings are the session's, and what the operations write
// (reports, bundles, saved archives) goes to a scratch root.

#include <string>

#include "adapters/engine/adapter_stack.h"
#include "simulator/graph/model_cache.h"
#include "tools/framework/operation.h"

namespace stickler::bench {

class BenchContext : public OperationContext {
 public:
  explicit BenchContext(std::string root) : root_(std::move(root)) {}
  ModelCache* models() override { return &models_; }
  AdapterStacks* adapterStacks() override { return &stacks_; }
  std::string workspaceRoot() override { return root_; }

 private:
  std::string root_;
  ModelCache models_;
  AdapterStacks stacks_;
};

}  // namespace stickler::bench
