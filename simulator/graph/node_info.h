#pragma once

#include <optional>
#include <string>

#include <torch/script.h>

#include "simulator/graph/module_table.h"
#include "simulator/graph/value_desc.h"

namespace stickler {

// Where a node of an inlined graph comes from.
struct NodeOrigin {
  std::string module_path;           // "" for the root module
  std::string module_class;          // the class of that module
  std::optional<SourceLine> code;    // the archive's TorchScript code
  std::optional<SourceLine> python;  // the original Python, where the archive recorded it
};

NodeOrigin originOf(const torch::jit::Node& node, const ModuleTable& modules);

// "aten::mul in transformer.h.0.attn (GPT2Attention) at modeling_gpt2.py:201": for messages.
std::string describeNode(const torch::jit::Node& node, const ModuleTable& modules);

}  // namespace stickler
