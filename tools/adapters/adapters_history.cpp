// catalog_history: an adapter's commits in the workspace catalog, with the evidence recorded
// about it, so that an agent (or its reviewer) need not run git log.
#include "adapters/catalog_repo/workspace_catalog.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string trailer(const Trailers& trailers, const std::string& key) {
  for (const auto& [name, value] : trailers) {
    if (name == key) return value;
  }
  return "";
}

json commitToJson(const CatalogCommit& commit) {
  json trailers = json::array();
  json evidence = json::array();
  for (const auto& [key, value] : commit.trailers) {
    trailers.push_back({{"key", key}, {"value", value}});
    if (key == "Evidence") evidence.push_back(value);
  }
  return {{"id", commit.id},
          {"short_id", commit.short_id},
          {"branch", commit.branch},
          {"action", trailer(commit.trailers, "Stickler-Action")},
          {"subject", commit.subject},
          {"body", commit.body},
          {"author", commit.author},
          {"time", commit.time},
          {"evidence", evidence},
          {"trailers", trailers},
          {"files_changed", commit.files_changed}};
}

json run(const json& input, OperationContext& context) {
  const std::string name = input.value("adapter", "");
  if (!name.empty()) WorkspaceCatalog::validateName(name);
  const size_t limit = input.contains("limit") ? input["limit"].get<size_t>() : context.listLimit();
  const WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  const std::vector<CatalogCommit> commits = catalog.history(name);
  json listed = json::array();
  std::string draft_tip;
  // Evidence counts for the text only when it came after the text's last change, on the line
  // that holds the text: the draft branch when a draft changes it, else main with the evidence
  // branch beside it. The commits are newest first, so evidence is current until the first
  // draft, revert, seed or approval commit of that line is met.
  std::string text_branch = "main";
  for (const CatalogAdapter& adapter :
       name.empty() ? std::vector<CatalogAdapter>{} : catalog.list()) {
    if (adapter.name == name) text_branch = adapter.branch;
  }
  const auto onTextLine = [&](const CatalogCommit& commit) {
    return text_branch == "main"
               ? commit.branch == "main" || commit.branch == WorkspaceCatalog::evidenceBranch(name)
               : commit.branch == text_branch;
  };
  int current_evidence = 0;
  bool text_seen = false;
  for (const CatalogCommit& commit : commits) {
    const std::string action = trailer(commit.trailers, "Stickler-Action");
    if (draft_tip.empty() && !name.empty() && commit.branch == "draft/" + name) {
      draft_tip = commit.id;
    }
    if (onTextLine(commit)) {
      if (action == "evidence") {
        if (!text_seen) ++current_evidence;
      } else {
        text_seen = true;
      }
    }
    if (limit == 0 || listed.size() < limit) listed.push_back(commitToJson(commit));
  }
  json output = {{"schema", "stickler.catalog_history"},
                 {"version", 1},
                 {"catalog", catalog.dir().string()},
                 {"commits", listed},
                 {"total", commits.size()}};
  if (!name.empty()) {
    output["adapter"] = name;
    output["draft_tip"] = draft_tip.empty() ? json() : json(draft_tip);
    output["evidence_since_last_change"] = current_evidence;
  }
  return output;
}

std::string renderText(const json& output) {
  std::string text;
  for (const auto& commit : output["commits"]) {
    text += commit["short_id"].get<std::string>() + "  " + commit["time"].get<std::string>() +
            "  " + commit["branch"].get<std::string>() + "  " +
            commit["action"].get<std::string>() + "  " + commit["subject"].get<std::string>() +
            "\n";
    for (const auto& evidence : commit["evidence"]) {
      text += "    Evidence: " + evidence.get<std::string>() + "\n";
    }
  }
  if (text.empty()) return "no commits\n";
  if (output.contains("evidence_since_last_change")) {
    text += std::to_string(output["evidence_since_last_change"].get<int>()) +
            " evidence commit(s) since the text last changed\n";
  }
  return text;
}

}  // namespace

Operation makeCatalogHistoryOperation() {
  Operation operation;
  operation.name = "catalog_history";
  operation.title = "Show an adapter's history in the workspace catalog";
  operation.description =
      "The commits of the workspace adapter catalog (stickler-adapters/), newest first: for one "
      "adapter, those that changed its file or carry evidence about it (draft_adapter, "
      "apply_adapter and adapt_model record them). Each commit gives its branch, action (seed, "
      "draft, revert, evidence), subject, author, time, evidence and trailers; for one adapter "
      "also the tip of its draft branch and how many evidence commits came after its text last "
      "changed (evidence older than the text is not evidence for it).";
  json schema = {{"type", "object"}, {"additionalProperties", false}};
  schema["properties"]["adapter"] = {
      {"type", "string"},
      {"description", "The adapter's name; every commit of the catalog when absent."}};
  schema["properties"]["limit"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"description",
       "At most this many commits, newest first (0: all; default: all on the command line, 100 "
       "over MCP)."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"schema", {{"const", "stickler.catalog_history"}}},
                               {"commits", {{"type", "array"}}},
                               {"total", {{"type", "integer"}}},
                               {"draft_tip", {{"type", {"string", "null"}}}},
                               {"evidence_since_last_change", {{"type", "integer"}}}}},
                             {"required", {"schema", "commits", "total"}}};
  operation.cli = {"adapters history", {"adapter"}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
