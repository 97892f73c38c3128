// kb_read: one knowledge-base page, skill or recorded gotcha, whole or one section.
#include "knowledge/kb_index.h"
#include "simulator/support/errors.h"
#include "simulator/support/text_format.h"
#include "tools/framework/operation_table.h"
#include "tools/knowledge/knowledge_support.h"

namespace stickler {

namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string id = requireString(input, "id");
  KnowledgeIndex& index = knowledgeIndexFor(gotchasDirectory(context));
  const auto page = index.page(id);
  if (!page) {
    std::string near;
    for (const KbHit& hit : index.search(id, 3)) near += (near.empty() ? "" : ", ") + hit.id;
    throw UserError("no knowledge page '" + id + "'" +
                    (near.empty() ? std::string() : " (did you mean: " + near + "?)"));
  }
  json output = {{"id", page->id},     {"kind", page->kind},       {"title", page->title},
                 {"tags", page->tags}, {"sources", page->sources}, {"path", page->path}};
  json headings = json::array();
  for (const KbSection& section : page->sections) {
    if (!section.heading.empty()) headings.push_back(section.heading);
  }
  output["sections"] = headings;
  if (!input.contains("section")) {
    output["text"] = page->body;
    return output;
  }
  // A section by its heading: exactly, else the first whose heading contains the words.
  const std::string wanted = asciiLower(requireString(input, "section"));
  const KbSection* found = nullptr;
  for (const KbSection& section : page->sections) {
    if (asciiLower(section.heading) == wanted) found = &section;
  }
  for (const KbSection& section : page->sections) {
    if (found == nullptr && !wanted.empty() &&
        asciiLower(section.heading).find(wanted) != std::string::npos) {
      found = &section;
    }
  }
  if (found == nullptr) {
    throw UserError("page '" + id + "' has no section '" + input["section"].get<std::string>() +
                    "' (its sections: " + headings.dump() + ")");
  }
  output["section"] = found->heading;
  output["text"] = found->text;
  return output;
}

}  // namespace

Operation makeKbReadOperation() {
  Operation operation;
  operation.name = "kb_read";
  operation.title = "Read a knowledge-base page";
  operation.description =
      "A page of the Spyre knowledge base, a skill or a recorded gotcha, by the id kb_search "
      "returned: its Markdown, tags, sources and section headings; with section, only the "
      "section under that heading (exact, or the first heading containing the words).";
  json schema = {{"type", "object"}, {"required", {"id"}}, {"additionalProperties", false}};
  schema["properties"]["id"] = {{"type", "string"},
                                {"description", "A page id, e.g. gotcha-vocab-padding."}};
  schema["properties"]["section"] = {
      {"type", "string"}, {"description", "A section heading (default: the whole page)."}};
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties", {{"id", {{"type", "string"}}}, {"text", {{"type", "string"}}}}},
      {"required", {"id", "text"}}};
  operation.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  operation.cli = {"kb read", {"id"}, {}};
  operation.run = run;
  operation.render_text = [](const json& output) { return output["text"].get<std::string>(); };
  return operation;
}

}  // namespace stickler
