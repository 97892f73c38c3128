// revert_adapter: takes an adapter off a model in the session, restoring the graph before it.
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "tools/adapter_support.h"
#include "tools/operation_table.h"
#include "tools/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  const std::string name = input.contains("adapter") ? requireString(input, "adapter") : "";
  const DeviceProfile profile = profileFromInput(input, context);
  ModelAdapters adapters(context, model_path, optionalStrings(input, "inputs"));
  AdapterStack& stack = adapters.stack();
  const AdapterApplication removed = stack.revert(name, profile);
  adapters.publish();
  return {{"schema", "stickler.revert"},
          {"version", 1},
          {"model", {{"path", model_path}, {"name", cardOf(*stack.original()).name}}},
          {"reverted", removed.adapter.metadata.name},
          {"restored_identity", identityOf(*stack.current()).sha256},
          {"graph_restored", stack.current() == removed.before},
          {"applied", stack.names()},
          {"blockers_left", blockersLeftToJson(*stack.current(), profile, context.listLimit())}};
}

std::string renderText(const json& report) {
  std::string text = "reverted " + report["reverted"].get<std::string>() + " on " +
                     report["model"]["name"].get<std::string>() + "\n  applied: ";
  for (const auto& name : report["applied"]) text += name.get<std::string>() + " ";
  return text + "\n  blockers left on " + report["blockers_left"]["profile"].get<std::string>() +
         ": " + std::to_string(report["blockers_left"]["total"].get<int>()) + "\n";
}

}  // namespace

Operation makeRevertAdapterOperation() {
  Operation operation;
  operation.name = "revert_adapter";
  operation.title = "Revert an adapter";
  operation.description =
      "Take an adapter off a model in this session (the last one applied when no adapter is "
      "named). The graph before it is restored exactly; adapters applied after it are applied "
      "again in order. Returns the adapters still applied and the blockers left on the profile.";
  json schema = {{"type", "object"}, {"required", {"model"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["adapter"] =
      adapterNameField("The adapter to take off; the last one applied when absent.");
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"schema", {{"const", "stickler.revert"}}},
                               {"reverted", {{"type", "string"}}},
                               {"applied", {{"type", "array"}}}}},
                             {"required", {"schema", "reverted", "applied"}}};
  operation.annotations = {false, false, false};
  operation.cli = {"revert", {"model"}, {{"inputs", "input"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
