// An adapter's pattern, replacement and condition compiled by LibTorch: the graphs the rewrite
// engine matches and inserts, and the condition as a callable TorchScript function.
#pragma once

#include <memory>

#include <torch/script.h>

#include "adapters/engine/adapter_file.h"
#include "adapters/engine/traced_no_ops.h"

namespace stickler {

struct CompiledRewrite {
  std::shared_ptr<torch::jit::CompilationUnit> unit;  // owns the functions below
  std::shared_ptr<torch::jit::Graph> pattern;         // without its static no-ops (traced_no_ops.h)
  // What is matched, in order: the pattern with slice arguments compared by meaning, then the
  // pattern without the operators the model's values may make no-ops (traced_no_ops.h).
  std::vector<MatchablePattern> forms;
  std::shared_ptr<torch::jit::Graph> replacement;
  torch::jit::Function* condition = nullptr;  // in `unit`; nullptr when the file has none
};

// Compiles the file's functions together (helpers included) so that replacement and
// condition may call helpers. A TorchScript error is a UserError "path:line:column: message"
// pointing into the adapter file.
CompiledRewrite compileRewrite(const AdapterFile& file);

}  // namespace stickler
