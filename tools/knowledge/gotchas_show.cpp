// gotchas show: one recorded gotcha, whole.
#include "tools/knowledge/gotcha_json.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string renderText(const json& gotcha) {
  std::string text = "# " + gotcha["title"].get<std::string>() + "\n\n";
  text += "id " + gotcha["id"].get<std::string>() + ", recorded " +
          std::to_string(gotcha["occurrences"].get<int>()) + "x, last " +
          gotcha["updated"].get<std::string>() + "\n";
  for (const char* field : {"model", "adapter", "profile"}) {
    if (!gotcha[field].get<std::string>().empty()) {
      text += std::string(field) + ": " + gotcha[field].get<std::string>() + "\n";
    }
  }
  text += "\n" + gotcha["body"].get<std::string>() + "\n";
  if (!gotcha["evidence"].empty()) {
    text += "\nEvidence:\n";
    for (const auto& entry : gotcha["evidence"]) text += "- " + entry.get<std::string>() + "\n";
  }
  return text;
}

}  // namespace

Operation makeShowGotchaOperation() {
  Operation operation;
  operation.name = "show_gotcha";
  operation.title = "Show a recorded gotcha";
  operation.description =
      "One gotcha recorded in this workspace, by id: its text, tags, what it concerns, the "
      "evidence of each time it was recorded.";
  json schema = {{"type", "object"}, {"required", {"id"}}, {"additionalProperties", false}};
  schema["properties"]["id"] = {{"type", "string"}, {"description", "A gotcha id."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties", {{"id", {{"type", "string"}}}}},
                             {"required", {"id", "title", "body"}}};
  operation.cli = {"gotchas show", {"id"}, {}};
  operation.run = [](const json& input, OperationContext& context) {
    return gotchaToJson(gotchaStore(context).get(requireString(input, "id")));
  };
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
