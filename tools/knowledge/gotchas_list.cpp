// gotchas list: the lessons recorded in this workspace, most recently seen first.
#include "tools/knowledge/gotcha_json.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& /*input*/, OperationContext& context) {
  json gotchas = json::array();
  for (const Gotcha& gotcha : gotchaStore(context).list()) {
    json entry = gotchaToJson(gotcha);
    entry.erase("body");
    gotchas.push_back(entry);
  }
  return {{"gotchas", gotchas}};
}

std::string renderText(const json& output) {
  std::string text;
  for (const auto& gotcha : output["gotchas"]) {
    text += gotcha["id"].get<std::string>() + "  (" +
            std::to_string(gotcha["occurrences"].get<int>()) + "x, " +
            gotcha["updated"].get<std::string>().substr(0, 10) + ")  " +
            gotcha["title"].get<std::string>() + "\n";
  }
  return text.empty() ? "no gotchas recorded in this workspace\n" : text;
}

}  // namespace

Operation makeListGotchasOperation() {
  Operation operation;
  operation.name = "list_gotchas";
  operation.title = "List recorded gotchas";
  operation.description =
      "The gotchas recorded in this workspace (record_gotcha), most recently seen first, with "
      "how often each was recorded and what it concerns. kb_search searches their text.";
  operation.input_schema = {
      {"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  operation.output_schema = {{"type", "object"},
                             {"properties", {{"gotchas", {{"type", "array"}}}}},
                             {"required", {"gotchas"}}};
  operation.cli = {"gotchas list", {}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
