// What a repro bundle holds: a region of the model's inlined graph (one operator, or the
// operators of one module call), the values it reads from outside, and the TorchScript module
// that runs it alone, outlined into submodules named as in the model.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include <torch/script.h>

#include "simulator/graph/model_card.h"

namespace stickler {

struct LoadedModel;

// The part of the model a repro holds: one operator, or every operator of a module call (and
// the blocks nested in them), in graph order.
struct Region {
  std::vector<const torch::jit::Node*> nodes;  // top-level nodes of the region, in graph order
  std::string module_path;                     // where the region sits ("" for the root module)
  std::string scope;                           // "operator" or "module"
};

// The operator alone; or every top-level node of `path` (nodes nested in blocks count through
// the node that holds the block; "" is the whole model).
Region operatorRegion(const torch::jit::Node& node);
Region moduleRegion(const LoadedModel& model, const std::string& path);

// Every node of the region, nested blocks included.
std::unordered_set<const torch::jit::Node*> nodesWithin(const Region& region);

// The values the region reads from outside itself, in the order it first reads them.
std::vector<const torch::jit::Value*> boundaryInputs(
    const Region& region, const std::unordered_set<const torch::jit::Node*>& within);

// The archive: forward(self, input0, ...) runs the region on its activations, with weights and
// scalars as constants. With `keep_paths`, each node sits in modules named as in the model
// (model.layers.0.self_attn), so whatever the device does by module path (a fault rule, say) it
// does in the repro too: nodes of one child module are outlined into a method of a submodule of
// that name, recursively.
struct ReproModule {
  torch::jit::Module module;
  std::vector<InputSpec> inputs;
  std::vector<at::Tensor> values;
};

// The module for `region`, given what it read from outside (`consumed[i]` for `boundary[i]`):
// weights and scalars become constants, activations inputs (kind captured).
ReproModule outlineRegion(const Region& region,
                          const std::vector<const torch::jit::Value*>& boundary,
                          const std::vector<c10::IValue>& consumed, const LoadedModel& model,
                          bool keep_paths);

}  // namespace stickler
