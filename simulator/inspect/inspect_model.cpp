#include "simulator/inspect/inspect_model.h"

#include <chrono>
#include <map>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/node_info.h"
#include "simulator/inspect/module_tree.h"

namespace stickler {
namespace {

using nlohmann::json;

constexpr int kInspectVersion = 1;

json valueDescToJson(const ValueDesc& desc) {
  json entry{{"kind", desc.kind}};
  if (desc.kind == "Tensor") {
    entry["shape"] = desc.shape;
    entry["dtype"] = desc.dtype;
  } else if (desc.kind == "list" || desc.kind == "tuple") {
    entry["length"] = desc.shape.at(0);
  } else if (!desc.value.empty()) {
    entry["value"] = desc.value;
  }
  return entry;
}

json sourceLineToJson(const std::optional<SourceLine>& line) {
  if (!line) return nullptr;
  return {{"file", line->file}, {"line", line->line}};
}

bool isAten(const torch::jit::Node& node) {
  return node.kind().is_aten();
}

json nodesToJson(const LoadedModel& model) {
  json nodes = json::array();
  int64_t index = 0;
  for (const torch::jit::Node* node : allNodes(*model.graph)) {
    if (!isAten(*node)) continue;
    const NodeOrigin origin = originOf(*node, model.modules);
    json entry{
        {"index", index++},
        {"op", node->kind().toQualString()},
        {"module", displayPath(origin.module_path)},
        {"module_class", origin.module_class},
        {"source",
         {{"code", sourceLineToJson(origin.code)}, {"python", sourceLineToJson(origin.python)}}}};
    json inputs = json::array(), outputs = json::array();
    auto record = model.records.find(node);
    if (record != model.records.end()) {
      for (const auto& desc : record->second.inputs) inputs.push_back(valueDescToJson(desc));
      for (const auto& desc : record->second.outputs) outputs.push_back(valueDescToJson(desc));
      entry["executions"] = record->second.executions;
    } else {
      entry["executions"] = 0;  // on a branch the example inputs did not take
    }
    entry["inputs"] = inputs;
    entry["outputs"] = outputs;
    nodes.push_back(std::move(entry));
  }
  return nodes;
}

json operatorHistogram(const LoadedModel& model) {
  std::map<std::string, int64_t> counts;
  for (const torch::jit::Node* node : allNodes(*model.graph)) {
    if (isAten(*node)) ++counts[node->kind().toQualString()];
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json histogram = json::array();
  for (const auto& [op, count] : sorted) histogram.push_back({{"op", op}, {"count", count}});
  return histogram;
}

json summarizeOutput(const at::Tensor& tensor, OutputKind kind) {
  json summary{{"shape", tensor.sizes().vec()}, {"dtype", dtypeName(tensor.scalar_type())}};
  if (!tensor.is_floating_point() || tensor.numel() == 0) return summary;
  const auto values = tensor.to(c10::kDouble);
  const auto finite = at::isfinite(values);
  summary["non_finite"] = values.numel() - finite.sum().item<int64_t>();
  summary["min"] = values.min().item<double>();
  summary["max"] = values.max().item<double>();
  summary["mean"] = values.mean().item<double>();
  if (kind == OutputKind::kLogits && tensor.dim() >= 2) {
    // The prediction at the last position of each sequence.
    auto last = tensor.dim() >= 3 ? tensor.select(-2, -1) : tensor;
    summary["top1_last_position"] =
        last.argmax(-1).reshape({-1}).to(c10::kLong).contiguous().data_ptr<int64_t>()[0];
  } else if (kind == OutputKind::kEmbeddings) {
    summary["l2_norm_first"] = values.reshape({values.size(0), -1})[0].norm().item<double>();
  }
  return summary;
}

json outputsToJson(const LoadedModel& model) {
  const std::vector<at::Tensor> tensors = flattenTensors(model.example_outputs);
  json outputs = json::array();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const bool named = i < model.card.outputs.size();
    const OutputKind kind = named ? model.card.outputs[i].kind : OutputKind::kOther;
    json entry{{"name", named ? model.card.outputs[i].name : "output." + std::to_string(i)},
               {"kind", outputKindName(kind)}};
    entry.update(summarizeOutput(tensors[i], kind));
    outputs.push_back(std::move(entry));
  }
  return outputs;
}

}  // namespace

json inspectModel(const InspectRequest& request, const TaskControl& control, ModelCache* cache) {
  control.progress(0, 2, "loading " + request.model);
  const auto model = obtainModel(request.model, request.inputs, cache);
  control.checkCancelled();
  control.progress(1, 2, "running it on the CPU");

  // Time a second run: the first one recorded shapes through an observer.
  const auto start = std::chrono::steady_clock::now();
  model->interpreter->run(model->example_inputs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const ModuleTreeNode tree = buildModuleTree(model->modules);
  int64_t buffers = 0;
  for (const auto& entry : model->modules.entries()) buffers += entry.own_buffers;
  json modules = json::array();
  for (const auto& entry : model->modules.entries()) {
    modules.push_back({{"path", displayPath(entry.path)},
                       {"class", entry.class_name},
                       {"qualified_class", entry.qualified_class},
                       {"parameters", entry.own_parameters},
                       {"total_parameters", model->modules.totalParameters(entry.path)}});
  }
  int64_t aten_nodes = 0, control_flow = 0;
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (isAten(*node)) ++aten_nodes;
    if (node->kind() == torch::jit::prim::If || node->kind() == torch::jit::prim::Loop) {
      ++control_flow;
    }
  }
  const json card = modelCardToJson(model->card);
  json report{
      {"schema", "stickler.inspect"},
      {"version", kInspectVersion},
      {"model",
       {{"path", model->path},
        {"sha256", model->sha256},
        {"name", model->card.name},
        {"family", model->card.family},
        {"class", tree.class_name}}},
      {"card", card},
      {"parameters",
       {{"total", model->unique_parameters},
        {"tied", tree.parameters - model->unique_parameters},
        {"buffers", buffers}}},
      {"module_tree", moduleTreeToJson(tree)},
      {"modules", modules},
      {"graph",
       {{"aten_nodes", aten_nodes},
        {"control_flow_nodes", control_flow},
        {"executable_nodes", model->interpreter->stepCount()},
        {"module_calls", model->interpreter->moduleCalls().size()}}},
      {"operators", operatorHistogram(*model)},
      {"inputs", card["inputs"]},
      {"outputs", outputsToJson(*model)},
      {"run", {{"backend", "cpu"}, {"seconds", seconds}, {"seed", 0}}},
  };
  if (request.include_nodes) report["nodes"] = nodesToJson(*model);
  return report;
}

}  // namespace stickler
