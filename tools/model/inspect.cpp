// inspect_model: what a model is made of, before anything runs on the device.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "simulator/graph/model_archive.h"
#include "simulator/inspect/inspect_model.h"
#include "simulator/inspect/module_tree.h"
#include "tools/framework/list_pages.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/model/inspect_report.h"

namespace stickler {
namespace {

using nlohmann::json;

json inputSchema() {
  json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "run": {
        "type": "string",
        "enum": ["auto", "yes", "no"],
        "default": "auto",
        "description": "Run the model once on the CPU for its outputs' values (min, max, mean, top-1) and the time of a run. auto: when its archive stores at most 1 GiB of tensors; a larger model is inspected from shapes alone, in seconds, its weights never read."
      },
      "include_nodes": {
        "type": "boolean",
        "default": true,
        "description": "List every aten node with its module path, source position, shapes and dtypes."
      }
    },
    "required": ["model"],
    "additionalProperties": false
  })");
  schema["properties"]["model"] = modelField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"].update(pageFields("node", "nodes"));
  return schema;
}

json outputSchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "schema": {"const": "stickler.inspect"},
      "version": {"type": "integer"},
      "model": {"type": "object"},
      "card": {"type": "object"},
      "parameters": {"type": "object"},
      "module_tree": {"type": "object"},
      "modules": {"type": "array"},
      "graph": {"type": "object"},
      "operators": {"type": "array"},
      "inputs": {"type": "array"},
      "outputs": {"type": "array"},
      "run": {"type": "object"},
      "nodes": {"type": "array"},
      "adapted": {"type": "object"}
    },
    "required": ["schema", "version", "model", "parameters", "module_tree", "operators", "inputs", "outputs"]
  })");
}

// How an archive saved adapted was made (adapted_archive.h): the adapters, the archive they
// were applied to, and what each decode graph took; nullopt for any other archive.
std::optional<json> adaptedRecord(const std::string& path) {
  const auto text = readArchiveExtraText(path, kAdaptersRecordPath, kAdaptersRecordMaxBytes);
  if (!text) return std::nullopt;
  const json record = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  const auto names = [](const json& list) {
    return list.is_array() &&
           std::all_of(list.begin(), list.end(), [](const json& name) { return name.is_string(); });
  };
  if (!record.is_object() || !names(record.value("adapters", json()))) {
    return json{{"error", std::string(kAdaptersRecordPath) + " is not a record of adapters"}};
  }
  json adapted{{"adapters", record["adapters"]}};
  // Archives saved before 2026-12-07 name only the adapted model's identity.
  for (const char* field : {"from_sha256", "from_archive"}) {
    if (record.value(field, json()).is_string()) adapted[field] = record[field];
  }
  if (record.contains("decode") && record["decode"].is_object()) {
    for (const auto& [graph, took] : record["decode"].items()) {
      if (names(took)) adapted["decode"][graph] = took;
    }
  }
  return adapted;
}

json run(const json& input, OperationContext& context) {
  InspectRequest request;
  request.model = context.resolvePath(requireString(input, "model"));
  request.inputs = optionalStrings(input, "inputs");
  request.include_nodes = optionalBool(input, "include_nodes", true);
  const std::string run_mode = input.at("run").get<std::string>();  // the schema's enum
  request.run = run_mode == "yes"  ? InspectRun::kYes
                : run_mode == "no" ? InspectRun::kNo
                                   : InspectRun::kAuto;
  const PageRequest nodes = pageRequest(input, "node", context);
  json report = inspectReport(inspectModel(request, context.task(), context.models()));
  keepPage(report, "nodes", nodes.offset, nodes.limit);
  if (auto adapted = adaptedRecord(request.model)) report["adapted"] = std::move(*adapted);
  return report;
}

ModuleTreeNode treeFromJson(const json& node) {
  ModuleTreeNode tree;
  tree.name = node.at("name");
  tree.path = node.at("path");
  tree.class_name = node.at("class");
  tree.count = node.at("count");
  tree.parameters = node.at("parameters");
  for (const auto& child : node.at("children")) tree.children.push_back(treeFromJson(child));
  return tree;
}

std::string shapeText(const json& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + shape[i].dump();
  return text + "]";
}

std::string adaptedText(const json& adapted) {
  if (adapted.contains("error")) return "adapted: " + adapted["error"].get<std::string>() + "\n";
  const auto list = [](const json& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : " ") + name.get<std::string>();
    return text.empty() ? std::string("none") : text;
  };
  std::string out = "adapted with: " + list(adapted["adapters"]);
  if (adapted.contains("from_sha256")) {
    out += " (from " + adapted.value("from_archive", std::string("an archive")) + ", sha256 " +
           adapted["from_sha256"].get<std::string>() + ")";
  }
  out += "\n";
  if (adapted.contains("decode")) {
    out += "  its decode graphs took:";
    for (const auto& [graph, took] : adapted["decode"].items()) {
      out += " " + graph + " [" + list(took) + "]";
    }
    out += "\n";
  }
  return out;
}

std::string renderText(const json& report) {
  std::string out;
  const auto& model = report.at("model");
  std::string title = model.value("name", "");
  if (title.empty()) title = model.value("class", "model");
  if (!model.value("family", "").empty()) title += " (" + model["family"].get<std::string>() + ")";
  out += title + "  " + model.at("path").get<std::string>() + "\n";
  out += "sha256 " + model.at("sha256").get<std::string>() + "\n";
  if (report.contains("adapted")) out += adaptedText(report["adapted"]);
  out += "\n";
  out += renderModuleTree(treeFromJson(report.at("module_tree")));
  const auto& parameters = report.at("parameters");
  out +=
      "\nParameters: " + humanCount(parameters["total"]) + " (" + parameters["total"].dump() + ")";
  if (parameters.value("tied", 0) > 0) {
    out += "; tied weights (" + humanCount(parameters["tied"]) +
           ") are shown in the tree under every module that holds them";
  }
  out += "\n";

  out += "\nInputs" +
         std::string(report["card"].value("source", "") == "flags" ? " (from --input)"
                                                                   : " (model card)") +
         ":\n";
  for (const auto& input : report.at("inputs")) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-20s %-16s %-9s %s",
                  input["name"].get<std::string>().c_str(), shapeText(input["shape"]).c_str(),
                  input["dtype"].get<std::string>().c_str(),
                  input["kind"].get<std::string>().c_str());
    out += line;
    if (input.contains("vocab_size")) out += " (vocab " + input["vocab_size"].dump() + ")";
    if (input.contains("range"))
      out += " in [" + input["range"][0].dump() + ", " + input["range"][1].dump() + ")";
    out += "\n";
  }

  if (report["run"].contains("seconds")) {
    char timing[64];
    std::snprintf(timing, sizeof timing, "%.2f ms", report["run"]["seconds"].get<double>() * 1e3);
    out += "\nOutputs (CPU run, " + std::string(timing) + "):\n";
  } else {
    out += "\nOutputs (shapes only, not run: " + report["run"].value("skipped", "") + "):\n";
  }
  for (const auto& output : report.at("outputs")) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-20s %-16s %-9s %s",
                  output["name"].get<std::string>().c_str(), shapeText(output["shape"]).c_str(),
                  output["dtype"].get<std::string>().c_str(),
                  output["kind"].get<std::string>().c_str());
    out += line;
    if (output.contains("mean")) {
      std::snprintf(line, sizeof line, "  min %.4g max %.4g mean %.4g", output["min"].get<double>(),
                    output["max"].get<double>(), output["mean"].get<double>());
      out += line;
      if (output["non_finite"].get<int64_t>() > 0) {
        out += "  NON-FINITE: " + output["non_finite"].dump();
      }
    }
    if (output.contains("top1_last_position")) {
      out += "  top-1 at last position: " + output["top1_last_position"].dump();
    }
    out += "\n";
  }

  const auto& graph = report.at("graph");
  out += "\nOperators (" + graph["aten_nodes"].dump() + " aten nodes, " +
         std::to_string(report["operators"].size()) + " kinds, " + graph["module_calls"].dump() +
         " module calls):\n";
  std::string line = " ";
  for (const auto& entry : report.at("operators")) {
    std::string item = " " + entry["op"].get<std::string>() + " x" + entry["count"].dump();
    if (line.size() + item.size() > 96) {
      out += line + "\n";
      line = " ";
    }
    line += item;
  }
  out += line + "\n";
  return out;
}

}  // namespace

Operation makeInspectModelOperation() {
  Operation op;
  op.name = "inspect_model";
  op.title = "Inspect a model";
  op.description =
      "Load a TorchScript model archive and describe it: the module tree with repeated layers "
      "collapsed (e.g. layers.0-11: LlamaDecoderLayer x12), parameter counts, an aten operator "
      "histogram, the inputs from its model card, the outputs of one CPU run, and (with "
      "include_nodes) every aten node with its HuggingFace-style module path, source line, "
      "shapes and dtypes. Use it first on any model, before checking device support.";
  op.input_schema = inputSchema();
  op.output_schema = outputSchema();
  op.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  op.cli = {.command = "inspect", .positional = {"model"}, .renamed = {{"inputs", "input"}}};
  op.run = run;
  op.render_text = renderText;
  return op;
}

}  // namespace stickler
