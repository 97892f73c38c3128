// show_applied: the adapters applied to a model in this session, with what each one changed.
#include "simulator/graph/model_facts.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  ModelAdapters adapters(context, model_path, optionalStrings(input, "inputs"));
  json applied = json::array();
  for (const auto& application : adapters.stack().applied()) {
    applied.push_back(applicationToJson(application, context.listLimit()));
  }
  return {{"schema", "stickler.applied"},
          {"version", 1},
          {"model",
           {{"path", model_path},
            {"name", cardOf(*adapters.stack().original()).name},
            {"sha256", identityOf(*adapters.stack().original()).sha256}}},
          {"applied", applied}};
}

std::string renderText(const json& report) {
  if (report["applied"].empty()) {
    return "no adapters applied to " + report["model"]["name"].get<std::string>() + "\n";
  }
  std::string text;
  for (const auto& application : report["applied"]) {
    text += application["adapter"].get<std::string>() + ": " +
            std::to_string(application["change"]["rewrites"].get<int>()) + " rewrite(s), " +
            equivalenceLine(application["equivalence"]) + "\n";
  }
  return text;
}

}  // namespace

Operation makeShowAppliedOperation() {
  Operation operation;
  operation.name = "show_applied";
  operation.title = "Show applied adapters";
  operation.description =
      "The adapters applied to a model in this session, in order, each with its graph change "
      "(nodes removed and added, by module) and its equivalence result.";
  json schema = {{"type", "object"}, {"required", {"model"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["inputs"] = inputsField();
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.applied"}}}, {"applied", {{"type", "array"}}}}},
      {"required", {"schema", "applied"}}};
  operation.cli = {"applied", {"model"}, {{"inputs", "input"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
