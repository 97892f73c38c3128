// `stickler inspect`: what a model is, as data. tools/model/inspect.cpp writes it as the
// stickler.inspect report (docs/inspect-json.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simulator/graph/model_cache.h"
#include "simulator/graph/model_card.h"
#include "simulator/graph/model_identity.h"
#include "simulator/graph/value_desc.h"
#include "simulator/inspect/module_tree.h"
#include "simulator/support/task_control.h"

namespace stickler {

// Whether inspect runs the model on the CPU, for its outputs' values and the time of a run.
// Everything else it reports is read from shapes, which a model loaded for its shapes only
// (its weights never read) gives in seconds at any size.
enum class InspectRun { kAuto, kYes, kNo };
// kAuto runs a model whose archive stores at most this many bytes of tensors (a CPU run of it
// takes about a second); a larger one is inspected from shapes alone.
inline constexpr uint64_t kInspectRunBytes = uint64_t{1} << 30;

struct InspectRequest {
  std::string model;                // path to a TorchScript archive
  std::vector<std::string> inputs;  // --input flags, replacing the model card's inputs
  bool include_nodes = true;        // list every aten node
  InspectRun run = InspectRun::kAuto;
};

struct ModuleSummary {
  std::string path;  // display path
  std::string class_name;
  std::string qualified_class;
  int64_t parameters = 0;        // its own
  int64_t total_parameters = 0;  // with everything below it
};

// One output of the CPU run on the example inputs.
struct OutputSummary {
  std::string name;
  OutputKind kind = OutputKind::kOther;
  std::vector<int64_t> shape;
  std::string dtype;
  // Floating-point outputs with values:
  std::optional<int64_t> non_finite;
  std::optional<double> min, max, mean;
  std::optional<int64_t> top1_last_position;  // logits: the prediction at the last position
  std::optional<double> l2_norm_first;        // embeddings: the first one's norm
};

// One aten node with where it comes from and what it saw.
struct NodeSummary {
  int64_t index = 0;
  std::string op;
  std::string module;  // display path
  std::string module_class;
  std::optional<SourceLine> code;
  std::optional<SourceLine> python;
  int64_t executions = 0;  // 0 on a branch the example inputs did not take
  std::vector<ValueDesc> inputs;
  std::vector<ValueDesc> outputs;
};

struct InspectResult {
  ModelIdentity model;
  std::string family;
  ModelCard card;
  ModuleTreeNode tree;
  int64_t unique_parameters = 0;  // tied weights counted once
  int64_t buffers = 0;
  std::vector<ModuleSummary> modules;
  int64_t aten_nodes = 0;
  int64_t control_flow_nodes = 0;
  int64_t executable_nodes = 0;
  int64_t module_calls = 0;
  std::vector<std::pair<std::string, int64_t>> operators;  // most used first
  std::vector<OutputSummary> outputs;
  std::optional<double> run_seconds;              // a CPU run on the example inputs, when it ran
  std::string not_run;                            // why it did not run, when it did not
  std::optional<std::vector<NodeSummary>> nodes;  // when asked for
};

// Module tree, parameters, operator histogram, inputs, outputs from a CPU run and, optionally,
// every aten node with its module path, source position and shapes. `cache`, when given, keeps
// the loaded model for later calls.
InspectResult inspectModel(const InspectRequest& request, const TaskControl& control = {},
                           ModelCache* cache = nullptr);

}  // namespace stickler
