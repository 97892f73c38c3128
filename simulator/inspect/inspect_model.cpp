#include "simulator/inspect/inspect_model.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/node_info.h"
#include "simulator/graph/zip_directory.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

// The bytes of tensor records the archive stores (weights, buffers, code constants); 0 when
// it cannot be read as a zip, which loading then reports.
uint64_t storedTensorBytes(const std::string& path) {
  uint64_t bytes = 0;
  try {
    for (const ZipEntry& entry : readZipDirectory(path)) {
      if (isTensorRecord(entry.name)) bytes += entry.uncompressed;
    }
  } catch (const UserError&) {
    return 0;
  }
  return bytes;
}

std::string gigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

bool isAten(const torch::jit::Node& node) {
  return node.kind().is_aten();
}

std::vector<NodeSummary> describeNodes(const LoadedModel& model) {
  std::vector<NodeSummary> nodes;
  int64_t index = 0;
  for (const torch::jit::Node* node : allNodes(*model.graph)) {
    if (!isAten(*node)) continue;
    const NodeOrigin origin = originOf(*node, model.modules);
    NodeSummary entry;
    entry.index = index++;
    entry.op = node->kind().toQualString();
    entry.module = displayPath(origin.module_path);
    entry.module_class = origin.module_class;
    entry.code = origin.code;
    entry.python = origin.python;
    if (auto record = model.records.find(node); record != model.records.end()) {
      entry.inputs = record->second.inputs;
      entry.outputs = record->second.outputs;
      entry.executions = record->second.executions;
    }
    nodes.push_back(std::move(entry));
  }
  return nodes;
}

std::vector<std::pair<std::string, int64_t>> operatorHistogram(const LoadedModel& model) {
  std::map<std::string, int64_t> counts;
  for (const torch::jit::Node* node : allNodes(*model.graph)) {
    if (isAten(*node)) ++counts[node->kind().toQualString()];
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

void summarizeValues(const at::Tensor& tensor, OutputSummary& summary) {
  if (!tensor.is_floating_point() || tensor.numel() == 0 || tensor.is_meta()) return;
  const auto values = tensor.to(c10::kDouble);
  const auto finite = at::isfinite(values);
  summary.non_finite = values.numel() - finite.sum().item<int64_t>();
  summary.min = values.min().item<double>();
  summary.max = values.max().item<double>();
  summary.mean = values.mean().item<double>();
  if (summary.kind == OutputKind::kLogits && tensor.dim() >= 2) {
    // The prediction at the last position of each sequence.
    auto last = tensor.dim() >= 3 ? tensor.select(-2, -1) : tensor;
    summary.top1_last_position =
        last.argmax(-1).reshape({-1}).to(c10::kLong).contiguous().data_ptr<int64_t>()[0];
  } else if (summary.kind == OutputKind::kEmbeddings) {
    summary.l2_norm_first = values.reshape({values.size(0), -1})[0].norm().item<double>();
  }
}

std::vector<OutputSummary> describeOutputs(const LoadedModel& model) {
  const std::vector<at::Tensor> tensors = flattenTensors(model.example_outputs);
  std::vector<OutputSummary> outputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const bool named = i < model.card.outputs.size();
    OutputSummary entry;
    entry.kind = named ? model.card.outputs[i].kind : OutputKind::kOther;
    entry.name = named ? model.card.outputs[i].name : "output." + std::to_string(i);
    entry.shape = tensors[i].sizes().vec();
    entry.dtype = dtypeName(tensors[i].scalar_type());
    summarizeValues(tensors[i], entry);
    outputs.push_back(std::move(entry));
  }
  return outputs;
}

}  // namespace

InspectResult inspectModel(const InspectRequest& request, const TaskControl& control,
                           ModelCache* cache) {
  InspectResult result;
  bool run = request.run == InspectRun::kYes;
  if (request.run == InspectRun::kAuto) {
    const uint64_t stored = storedTensorBytes(request.model);
    run = stored <= kInspectRunBytes;
    if (!run) {
      result.not_run = "its archive stores " + gigabytes(stored) +
                       " of tensors: inspected from shapes, its weights not read (run: yes "
                       "runs it on the CPU)";
    }
  } else if (!run) {
    result.not_run = "not asked to (run: no)";
  }
  control.progress(0, 2, "loading " + request.model);
  const auto model = obtainModel(request.model, request.inputs, cache,
                                 run ? ModelNeeds::kValues : ModelNeeds::kShapes);
  control.checkCancelled();
  if (run) {
    control.progress(1, 2, "running it on the CPU");
    // Time a second run: the first one recorded shapes through an observer.
    const auto start = std::chrono::steady_clock::now();
    model->interpreter->run(model->example_inputs);
    result.run_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  result.model = model->identity();
  result.family = model->card.family;
  result.card = model->card;
  result.tree = buildModuleTree(model->modules);
  result.unique_parameters = model->unique_parameters;
  for (const auto& entry : model->modules.entries()) {
    result.buffers += entry.own_buffers;
    result.modules.push_back({displayPath(entry.path), entry.class_name, entry.qualified_class,
                              entry.own_parameters, model->modules.totalParameters(entry.path)});
  }
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (isAten(*node)) ++result.aten_nodes;
    if (node->kind() == torch::jit::prim::If || node->kind() == torch::jit::prim::Loop) {
      ++result.control_flow_nodes;
    }
  }
  result.executable_nodes = model->interpreter->stepCount();
  result.module_calls = static_cast<int64_t>(model->interpreter->moduleCalls().size());
  result.operators = operatorHistogram(*model);
  result.outputs = describeOutputs(*model);
  if (request.include_nodes) result.nodes = describeNodes(*model);
  return result;
}

}  // namespace stickler
