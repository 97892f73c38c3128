// match_adapters: which catalog adapters change a model, and which blockers each one clears.
#include "adapters/engine/adapter_matching.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "tools/adapters/adapter_json.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  const DeviceProfile profile = profileFromInput(input, context);
  const auto catalog = adapterCatalog(context);
  ModelAdapters adapters(context, model_path, optionalStrings(input, "inputs"));
  const auto model = adapters.stack().current();
  json matches = json::array();
  json others = json::array();
  for (const AdapterMatch& match : matchAdapters(catalog, model, profile)) {
    (match.applies ? matches : others).push_back(adapterMatchToJson(match));
  }
  return {{"schema", "stickler.match"},
          {"version", 1},
          {"model", {{"path", model_path}, {"name", cardOf(*model).name}}},
          {"profile", profile.name},
          {"blockers", blockersLeftToJson(*model, profile, context.listLimit())},
          {"matches", matches},
          {"not_matching", others}};
}

std::string renderText(const json& report) {
  std::string text = report["model"]["name"].get<std::string>() + " on " +
                     report["profile"].get<std::string>() + ": " +
                     std::to_string(report["blockers"]["total"].get<int>()) + " blocker(s)\n";
  for (const auto& match : report["matches"]) {
    text += "  " + match["name"].get<std::string>() + ": " + match["reason"].get<std::string>() +
            (match["for_profile"].get<bool>() ? "" : " (not listed for this profile)") + "\n";
  }
  if (report["matches"].empty()) text += "  no adapter in the catalog changes this model\n";
  return text;
}

}  // namespace

Operation makeMatchAdaptersOperation() {
  Operation operation;
  operation.name = "match_adapters";
  operation.title = "Match adapters";
  operation.description =
      "Which catalog adapters apply to a model on a device profile, and why: each adapter is "
      "tried on a copy of the model (adapters already applied in this session included), and "
      "the profile's blockers before and after are compared, so each match names the blockers "
      "(rule, op, module) it clears or introduces. Adapters that match nothing are listed with "
      "the reason.";
  json schema = {{"type", "object"}, {"required", {"model"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties", {{"schema", {{"const", "stickler.match"}}}, {"matches", {{"type", "array"}}}}},
      {"required", {"schema", "matches"}}};
  operation.cli = {"match", {"model"}, {{"inputs", "input"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
