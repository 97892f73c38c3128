// kb_search: the knowledge base, the skills and the recorded gotchas, searched with BM25; each
// hit names its page, the section that matched best and the words around the match.
#include "knowledge/kb_index.h"
#include "simulator/support/errors.h"
#include "tools/knowledge/knowledge_support.h"
#include "tools/framework/operation_table.h"

namespace stickler {

namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string query = requireString(input, "query");
  if (query.size() > 1000) throw UserError("query is longer than 1000 characters");
  const std::string kind = input.value("kind", "");
  if (!kind.empty() && kind != "page" && kind != "skill" && kind != "gotcha") {
    throw UserError("kind must be page, skill or gotcha, not '" + kind + "'");
  }
  const double limit = optionalNumber(input, "limit", 5);
  if (!(limit >= 1 && limit <= 50)) throw UserError("limit must be from 1 to 50");
  KnowledgeIndex& index = knowledgeIndexFor(gotchasDirectory(context));
  json results = json::array();
  for (const KbHit& hit : index.search(query, static_cast<size_t>(limit), kind)) {
    results.push_back({{"id", hit.id},
                       {"kind", hit.kind},
                       {"title", hit.title},
                       {"heading", hit.heading},
                       {"snippet", hit.snippet},
                       {"score", hit.score},
                       {"uri", knowledgeUri(hit.kind, hit.id)}});
  }
  return {{"query", query}, {"results", results}};
}

std::string renderText(const json& output) {
  std::string text;
  for (const auto& hit : output["results"]) {
    text += hit["id"].get<std::string>() + " (" + hit["kind"].get<std::string>() +
            "): " + hit["title"].get<std::string>();
    if (!hit["heading"].get<std::string>().empty()) {
      text += " > " + hit["heading"].get<std::string>();
    }
    text += "\n    " + hit["snippet"].get<std::string>() + "\n";
  }
  return text.empty() ? "nothing matches\n" : text;
}

}  // namespace

Operation makeKbSearchOperation() {
  Operation operation;
  operation.name = "kb_search";
  operation.title = "Search the Spyre knowledge base";
  operation.description =
      "Search how the Spyre device and its software stack behave: hardware (sticks, per-core "
      "span, DL16), operator support and CPU fallbacks, layout rules, known gotchas, every "
      "catalog adapter's pattern, the agent skills, and the gotchas recorded in this workspace. "
      "Ranked with BM25; each result gives the page id, the section that matched and a snippet "
      "with the matching words in [brackets]. Read a page or section with kb_read.";
  json schema = {{"type", "object"}, {"required", {"query"}}, {"additionalProperties", false}};
  schema["properties"]["query"] = {
      {"type", "string"},
      {"description", "Words or a question, e.g. 'why does torch.pow fail on the device'."}};
  schema["properties"]["kind"] = {{"type", "string"},
                                  {"enum", {"page", "skill", "gotcha"}},
                                  {"description", "Only pages, skills or gotchas (default all)."}};
  schema["properties"]["limit"] = {
      {"type", "integer"}, {"default", 5}, {"description", "At most this many pages (1-50)."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties", {{"results", {{"type", "array"}}}}},
                             {"required", {"results"}}};
  operation.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  operation.cli = {"kb search", {"query"}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
