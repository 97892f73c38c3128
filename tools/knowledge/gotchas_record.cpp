// record_gotcha: a lesson learned, kept in the workspace's store and as a Markdown page committed
// to stickler-gotchas/ (git), searchable with kb_search at once; the same lesson recorded again
// is merged into the page already there.
#include "simulator/support/errors.h"
#include "tools/knowledge/gotcha_json.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string optionalString(const json& input, const char* field) {
  return input.contains(field) ? requireString(input, field) : std::string();
}

json run(const json& input, OperationContext& context) {
  Gotcha gotcha;
  gotcha.title = requireString(input, "title");
  gotcha.body = requireString(input, "body");
  gotcha.tags = optionalStrings(input, "tags");
  gotcha.model = optionalString(input, "model");
  gotcha.adapter = optionalString(input, "adapter");
  gotcha.profile = optionalString(input, "profile");
  if (input.contains("evidence")) gotcha.evidence = {requireString(input, "evidence")};
  const GotchaRecorded recorded = gotchaStore(context).record(gotcha);
  return {{"gotcha", gotchaToJson(recorded.gotcha)},
          {"merged", recorded.merged},
          {"similarity", recorded.similarity},
          {"commit", recorded.commit},
          {"page", recorded.page}};
}

std::string renderText(const json& output) {
  const json& gotcha = output["gotcha"];
  return (output["merged"] ? "merged into " : "recorded ") + gotcha["id"].get<std::string>() +
         " (seen " + std::to_string(gotcha["occurrences"].get<int>()) + "x), commit " +
         output["commit"].get<std::string>().substr(0, 12) + ": " +
         output["page"].get<std::string>() + "\n";
}

}  // namespace

Operation makeRecordGotchaOperation() {
  Operation operation;
  operation.name = "record_gotcha";
  operation.title = "Record a gotcha";
  operation.description =
      "Keep a lesson learned while bringing a model up (a device behaviour, a trap in an "
      "adapter, a profile quirk) so the next model is cheaper: stored in the workspace, "
      "written as a Markdown page in stickler-gotchas/ and committed to its git history, and "
      "found by kb_search from the next call on. A lesson already recorded in much the same "
      "words is merged into that page (its count, tags and evidence grow) instead of piling up.";
  json schema = {
      {"type", "object"}, {"required", {"title", "body"}}, {"additionalProperties", false}};
  schema["properties"]["title"] = {{"type", "string"}, {"description", "The lesson in one line."}};
  schema["properties"]["body"] = {
      {"type", "string"},
      {"description", "What happens, why, and what to do about it (Markdown)."}};
  schema["properties"]["tags"] = {{"type", "array"},
                                  {"items", {{"type", "string"}}},
                                  {"description", "Operators, concepts: aten::topk, layout."}};
  schema["properties"]["model"] = {{"type", "string"}, {"description", "The model it concerns."}};
  schema["properties"]["adapter"] = {{"type", "string"},
                                     {"description", "The adapter it concerns."}};
  schema["properties"]["profile"] = {{"type", "string"},
                                     {"description", "The device profile it concerns."}};
  schema["properties"]["evidence"] = {
      {"type", "string"},
      {"description", "What showed it: a report id, a repro command, a run's numbers."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"gotcha", {{"type", "object"}}},
                               {"merged", {{"type", "boolean"}}},
                               {"commit", {{"type", "string"}}}}},
                             {"required", {"gotcha", "merged", "commit"}}};
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = false};
  operation.cli = {"gotchas record", {}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
