#pragma once

// The context the benchmarks call operations in, as an MCP session would: models stay loaded,
// and what the operations write (reports, bundles, saved archives) goes to a scratch root.

#include <string>

#include "simulator/graph/model_cache.h"
#include "tools/framework/operation.h"

namespace stickler::bench {

class BenchContext : public OperationContext {
 public:
  explicit BenchContext(std::string root) : root_(std::move(root)) {}
  ModelCache* models() override { return &models_; }
  std::string workspaceRoot() override { return root_; }

 private:
  std::string root_;
  ModelCache models_;
};

}  // namespace stickler::bench
