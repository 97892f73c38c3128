#include "tools/model/inspect_report.h"

#include "tools/reports/result_json.h"

namespace stickler {

using nlohmann::json;

namespace {

constexpr int kInspectVersion = 1;

// As inspect reports write a value: lists and tuples by their length.
json valueToJson(const ValueDesc& desc) {
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

json nodeToJson(const NodeSummary& node) {
  json inputs = json::array(), outputs = json::array();
  for (const auto& desc : node.inputs) inputs.push_back(valueToJson(desc));
  for (const auto& desc : node.outputs) outputs.push_back(valueToJson(desc));
  return {{"index", node.index},
          {"op", node.op},
          {"module", node.module},
          {"module_class", node.module_class},
          {"source",
           {{"code", sourceLineToJson(node.code)}, {"python", sourceLineToJson(node.python)}}},
          {"executions", node.executions},
          {"inputs", inputs},
          {"outputs", outputs}};
}

json outputToJson(const OutputSummary& output) {
  json entry{{"name", output.name},
             {"kind", outputKindName(output.kind)},
             {"shape", output.shape},
             {"dtype", output.dtype}};
  if (output.non_finite) entry["non_finite"] = *output.non_finite;
  if (output.min) entry["min"] = *output.min;
  if (output.max) entry["max"] = *output.max;
  if (output.mean) entry["mean"] = *output.mean;
  if (output.top1_last_position) entry["top1_last_position"] = *output.top1_last_position;
  if (output.l2_norm_first) entry["l2_norm_first"] = *output.l2_norm_first;
  return entry;
}

}  // namespace

json inspectReport(const InspectResult& result) {
  json model = modelIdentityToJson(result.model);
  model["family"] = result.family;
  model["class"] = result.tree.class_name;
  json modules = json::array();
  for (const ModuleSummary& module : result.modules) {
    modules.push_back({{"path", module.path},
                       {"class", module.class_name},
                       {"qualified_class", module.qualified_class},
                       {"parameters", module.parameters},
                       {"total_parameters", module.total_parameters}});
  }
  json operators = json::array();
  for (const auto& [op, count] : result.operators) {
    operators.push_back({{"op", op}, {"count", count}});
  }
  json outputs = json::array();
  for (const OutputSummary& output : result.outputs) outputs.push_back(outputToJson(output));
  const json card = modelCardToJson(result.card);
  json report{
      {"schema", "stickler.inspect"},
      {"version", kInspectVersion},
      {"model", model},
      {"card", card},
      {"parameters",
       {{"total", result.unique_parameters},
        {"tied", result.tree.parameters - result.unique_parameters},
        {"buffers", result.buffers}}},
      {"module_tree", moduleTreeToJson(result.tree)},
      {"modules", modules},
      {"graph",
       {{"aten_nodes", result.aten_nodes},
        {"control_flow_nodes", result.control_flow_nodes},
        {"executable_nodes", result.executable_nodes},
        {"module_calls", result.module_calls}}},
      {"operators", operators},
      {"inputs", card["inputs"]},
      {"outputs", outputs},
  };
  if (result.run_seconds) {
    report["run"] = {{"backend", "cpu"}, {"seconds", *result.run_seconds}, {"seed", 0}};
  } else {
    report["run"] = {{"backend", "cpu"}, {"skipped", result.not_run}};
  }
  if (result.nodes) {
    json nodes = json::array();
    for (const NodeSummary& node : *result.nodes) nodes.push_back(nodeToJson(node));
    report["nodes"] = nodes;
  }
  return report;
}

}  // namespace stickler
