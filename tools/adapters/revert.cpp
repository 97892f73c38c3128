// revert_adapter: takes an adapter off a model in the session, restoring the graph before it.
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  const std::string name = input.contains("adapter") ? requireString(input, "adapter") : "";
  const bool all = input.value("all", false);
  if (all && !name.empty()) throw UserError("give adapter or all, not both");
  const DeviceProfile profile = profileFromInput(input, context);
  ModelAdapters adapters(context, model_path, optionalStrings(input, "inputs"));
  AdapterStack& stack = adapters.stack();
  std::vector<std::string> reverted;
  bool restored = true;
  if (all) {
    reverted = stack.clear();  // nothing to re-apply: the original is kept as loaded
  } else {
    const AdapterApplication removed = stack.revert(name, profile);
    reverted = {removed.adapter.metadata.name};
    restored = stack.current() == removed.before;
  }
  adapters.publish();
  return {{"schema", "stickler.revert"},
          {"version", 2},
          {"model", {{"path", model_path}, {"name", cardOf(*stack.original()).name}}},
          {"reverted", reverted},
          {"restored_identity", identityOf(*stack.current()).sha256},
          {"original", stack.current() == stack.original()},
          {"graph_restored", restored},
          {"applied", stack.names()},
          {"session", sessionStackToJson(stack)},
          {"blockers_left", blockersLeftToJson(*stack.current(), profile, context.listLimit())}};
}

std::string renderText(const json& report) {
  std::string text = "reverted";
  for (const auto& name : report["reverted"]) text += " " + name.get<std::string>();
  if (report["reverted"].empty()) text += " nothing";
  text += " on " + report["model"]["name"].get<std::string>() + "\n  applied: ";
  for (const auto& name : report["applied"]) text += name.get<std::string>() + " ";
  if (report["original"].get<bool>()) text += "(none: the original archive)";
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
      "named, every one with all: true, which returns the model to its original archive). The "
      "graph before it is restored exactly; adapters applied after it are applied again in "
      "order. Returns the adapters taken off (reverted), those still applied and the blockers "
      "left on the profile. " +
      std::string(kChangesTheSession);
  json schema = {{"type", "object"}, {"required", {"model"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["adapter"] =
      adapterNameField("The adapter to take off; the last one applied when absent.");
  schema["properties"]["all"] = {
      {"type", "boolean"},
      {"description",
       "Take every adapter off: the session's model is the original archive again."}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.revert"}}},
        {"reverted", {{"type", "array"}}},
        {"original", {{"type", "boolean"}}},
        {"applied", {{"type", "array"}}},
        {"session", {{"type", "object"}}}}},
      {"required", {"schema", "reverted", "applied", "original", "session"}}};
  operation.annotations = {false, false, false};
  operation.cli = {"revert", {"model"}, {{"inputs", "input"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
