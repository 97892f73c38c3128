#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/model_card.h"
#include "simulator/graph/model_identity.h"
#include "simulator/graph/model_memo.h"
#include "simulator/graph/model_recipe.h"
#include "simulator/graph/module_table.h"
#include "simulator/graph/record_from.h"
#include "simulator/graph/value_desc.h"
#include "simulator/interpreter/interpreter.h"

namespace stickler {

// What one node consumed and produced when the model ran on its example inputs.
struct NodeRecord {
  std::vector<ValueDesc> inputs;
  std::vector<ValueDesc> outputs;
  int64_t executions = 0;  // more than 1 inside loops; the descriptions are of the first
};

struct LoadOptions {
  std::vector<InputSpec> inputs;  // from --input; when given they replace the card's
  uint64_t seed = 0;              // for the example inputs
  // Record what each node sees from shapes alone (shape_only.h): the weights are not read, and
  // the example outputs and every value computed from a weight are shapes without values.
  // Enough to inspect and lower a model, in seconds at any size; not to run it.
  bool shapes_only = false;
  // Record from shapes alone as above, but keep the weights to run the model: what a model host
  // needs, which lowers and runs the model but whose example outputs no one reads (the caller's
  // are the reference). The example outputs are shapes; an operator that shapes alone do not
  // carry through makes the model record from values after all.
  bool records_from_shapes = false;
  // A graph of the card's decode interface instead of the forward: its method, with its inputs
  // and outputs in place of the card's.
  ModelGraph graph = ModelGraph::kForward;
};

// A TorchScript model as Stickler sees it: the module, its inlined graph in which every node
// carries its module path, the module hierarchy, example inputs from the card, and the
// shapes every node saw when run on them.
struct LoadedModel {
  std::string path;
  std::string sha256;
  ModelCard card;
  // The adapters applied to the archive to make this model, in order (see ModelIdentity).
  std::vector<std::string> adapters;
  ModelIdentity identity() const { return {path, sha256, card.name, adapters}; }
  // How another process makes this model again (a model host): the archive, the example
  // inputs' seed and specs, and the adapters above, each with its source.
  ModelRecipe recipe;
  // What is worked out from the model once and kept with it: what a model host is told of it
  // (model_host_client.h), the whole model's lowering per device (causal_localization.cpp).
  ModelMemo memo;
  torch::jit::Module module;
  ModelGraph graph_kind = ModelGraph::kForward;  // which of the archive's graphs `graph` is
  std::shared_ptr<torch::jit::Graph> graph;
  ModuleTable modules;
  int64_t unique_parameters = 0;  // tied weights (lm_head = wte) counted once
  // Modules an adapter placed on the host: they run on the CPU in every device run.
  std::vector<std::string> host_modules;
  std::unique_ptr<Interpreter> interpreter;
  std::vector<c10::IValue> example_inputs;
  // The seed the example inputs were drawn from; an equivalence check's further draws take the
  // seeds after it (the review gate loads models with seeds an agent never used).
  uint64_t seed = 0;
  // Per card input, the values stored in the archive for inputs of kind captured (undefined
  // for the others).
  std::vector<at::Tensor> captured_inputs;
  std::vector<c10::IValue> example_outputs;  // the forward's outputs on the example inputs
  std::unordered_map<const torch::jit::Node*, NodeRecord> records;
  // Loaded with LoadOptions::shapes_only: `interpreter` computes on shapes where a weight is
  // read, and the example outputs have no values.
  bool shapes_only = false;
  // Loaded with LoadOptions::records_from_shapes, and whether its records did come from shapes
  // (rebuilt models record the same way).
  bool records_from_shapes = false;
};

std::unique_ptr<LoadedModel> loadModel(const std::string& path, const LoadOptions& options = {});

// Throws a UserError saying so when the archive stores no weights (its weights are shapes
// only, as a sweep's real geometries are) or the model was loaded for its shapes only: such a
// model is inspected, checked and lowered (with adapters, in a sweep), but `doing` (running
// it, localizing it) needs values.
void requireWeights(const LoadedModel& model, const std::string& doing);

// The same model with `graph` (and `module`, for adaptations that add or change weights) in
// place of its own: card, example inputs and module table are the base's; the example inputs
// are run again to record what each node sees. `identity` stands in for the archive's hash.
// `also` observes that run too (to capture values without running the model again; it records
// from values).
std::unique_ptr<LoadedModel> rebuildModel(const LoadedModel& base, const torch::jit::Module& module,
                                          std::shared_ptr<torch::jit::Graph> graph,
                                          const std::string& identity,
                                          ExecutionObserver* also = nullptr,
                                          RecordFrom record_from = RecordFrom::kAsTheBase);

// The same model run on `inputs` (values for the card's inputs, in order) instead of its example
// inputs: what it records and its example outputs come from them. A decode step's real inputs
// (the reference's cache after the steps before it) are what localization bisects it on.
std::unique_ptr<LoadedModel> withExampleInputs(const LoadedModel& base,
                                               std::vector<c10::IValue> inputs);

// LoadOptions from --input flags (name:shape:dtype[:kind]).
LoadOptions loadOptionsFromFlags(const std::vector<std::string>& input_flags);

}  // namespace stickler
