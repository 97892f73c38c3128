// review baseline: the models the catalog's main passes, run and recorded as known models, so
// that the approval gate's regression run has something to check before approvals grow it.
// Command line only, with the reviewer's other commands.
#include "adapters/catalog_repo/workspace_catalog.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/review/review_gate.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  GateOptions options;
  options.model_seconds = input.at("model_timeout_seconds").get<double>();
  options.decode_steps = input.at("decode").get<int64_t>();
  ProposalStore store = openReviewStore(context);
  const WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  return baselineModels(context, store, catalog, input.at("models").get<std::vector<std::string>>(),
                        resolveProfile(requireString(input, "profile"), context), options);
}

std::string render(const json& output) {
  std::string text;
  for (const json& model : output["models"]) {
    text +=
        model["model"].get<std::string>() + " on " + output["profile"].get<std::string>() + ": " +
        gateVerdictText(model) + (model["known"].get<bool>() ? ", recorded as a known model" : "") +
        (model.contains("reason") ? " (" + model["reason"].get<std::string>() + ")" : "") + "\n";
  }
  return text + std::to_string(output["known_models"].get<size_t>()) +
         " known model(s): the gate checks them again before main changes\n";
}

}  // namespace

Operation makeReviewBaselineOperation() {
  Operation operation;
  operation.name = "review_baseline";
  operation.title = "Record the models the catalog passes";
  operation.description =
      "Run models on a profile with the catalog's main (every adapter meant for each, in a "
      "worker process with a timeout, as the approval gate does) and record those that pass end "
      "to end as known models: the approval gate then checks them again before any proposal "
      "changes main. A reviewer's command (the command line only). Exit status 1 when a model "
      "does not pass (it is not recorded).";
  json schema = {{"type", "object"}, {"required", {"models"}}, {"additionalProperties", false}};
  schema["properties"]["models"] = {
      {"type", "array"},
      {"items", {{"type", "string"}}},
      {"minItems", 1},
      {"description", "Model archives the catalog should keep passing."}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["model_timeout_seconds"] = modelTimeoutField();
  schema["properties"]["decode"] = judgeDecodeField();
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.baseline"}}}, {"models", {{"type", "array"}}}}},
      {"required", {"schema", "models"}}};
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = true};
  operation.over_mcp = false;
  operation.cli = {
      "review baseline", {}, {{"models", "model"}, {"model_timeout_seconds", "model-timeout"}}};
  operation.run = run;
  operation.render_text = render;
  operation.exit_status = [](const json& output) {
    for (const json& model : output["models"]) {
      if (!model.value("known", false)) return ExitStatus::kFailed;
    }
    return ExitStatus::kOk;
  };
  return operation;
}

}  // namespace stickler
