// The knowledge base over MCP: its pages, the skills and the workspace's recorded gotchas as
// stickler:// resources, and each skill as a prompt an agent (or its user) starts from.
#include "knowledge/kb_index.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"
#include "simulator/support/text_files.h"

namespace stickler {

using nlohmann::json;

namespace {

struct KnowledgeKind {
  const char* kind;    // page, skill, gotcha
  const char* prefix;  // the URI prefix
  const char* title;
  const char* description;
};

constexpr KnowledgeKind kKinds[] = {
    {"page", "stickler://knowledge/", "A knowledge-base page",
     "How the Spyre device and its stack behave: hardware, operators, layout, gotchas, "
     "adapter patterns (Markdown with front matter)."},
    {"skill", "stickler://skills/", "An agent skill",
     "A procedure in the Agent Skills format (SKILL.md): drafting adapters, triaging "
     "blockers, localizing divergence, preparing a review."},
    {"gotcha", "stickler://gotchas/", "A recorded gotcha",
     "A lesson recorded in this workspace with record_gotcha (Markdown)."}};

std::string gotchasOf(const Workspace& workspace) {
  return workspace.roots().at(0) + "/stickler-gotchas";
}

std::optional<json> readKnowledge(const Workspace& workspace, const KnowledgeKind& kind,
                                  const std::string& uri) {
  const std::string prefix = kind.prefix;
  if (uri.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string id = uri.substr(prefix.size());
  for (const KbPage& page : knowledgeIndexFor(gotchasOf(workspace)).pages(kind.kind)) {
    if (page.id != id) continue;
    return json::array(
        {{{"uri", uri}, {"mimeType", "text/markdown"}, {"text", readTextFile(page.path)}}});
  }
  throw RpcFailure(rpc_error::kResourceNotFound, std::string("no ") + kind.kind + " " + uri);
}

std::vector<std::string> idsOf(const Workspace& workspace, const char* kind,
                               const std::string& prefix) {
  std::vector<std::string> ids;
  for (const KbPage& page : knowledgeIndexFor(gotchasOf(workspace)).pages(kind)) {
    if (page.id.rfind(prefix, 0) == 0) ids.push_back(page.id);
  }
  return ids;
}

}  // namespace

void addKnowledgeResources(McpCatalog& catalog, const Workspace& workspace) {
  KnowledgeIndex& index = knowledgeIndexFor(gotchasOf(workspace));
  // Shipped pages and skills are listed; gotchas change while the server runs, so they are
  // reached through their template (and found by kb_search).
  for (const KnowledgeKind& kind : kKinds) {
    if (std::string(kind.kind) == "gotcha") continue;
    for (const KbPage& page : index.pages(kind.kind)) {
      const std::string uri = kind.prefix + page.id;
      catalog.resources.push_back(
          {{{"uri", uri},
            {"name", page.id},
            {"title", page.title},
            {"description", page.description.empty() ? std::string(kind.title) + ": " + page.title
                                                     : page.description},
            {"mimeType", "text/markdown"}},
           [&workspace, &kind, uri] { return *readKnowledge(workspace, kind, uri); }});
    }
  }
  for (const KnowledgeKind& kind : kKinds) {
    const std::string variable = std::string(kind.kind) == "skill" ? "name" : "id";
    catalog.templates.push_back(
        {{{"uriTemplate", std::string(kind.prefix) + "{" + variable + "}"},
          {"name", std::string("knowledge-") + kind.kind},
          {"title", kind.title},
          {"description", kind.description},
          {"mimeType", "text/markdown"}},
         [&workspace, &kind](const std::string& uri) {
           return readKnowledge(workspace, kind, uri);
         },
         [&workspace, &kind](const std::string&, const std::string& prefix) {
           return idsOf(workspace, kind.kind, prefix);
         }});
  }
}

void addSkillPrompts(McpCatalog& catalog, const Workspace& workspace) {
  for (const KbPage& skill : knowledgeIndexFor(gotchasOf(workspace)).pages("skill")) {
    McpPrompt prompt;
    prompt.definition = {
        {"name", skill.id},
        {"title", skill.title},
        {"description", skill.description},
        {"arguments",
         json::array({{{"name", "task"},
                       {"description", "What to apply the skill to: a model, a profile, a goal."},
                       {"required", false}}})}};
    const std::string id = skill.id;
    prompt.get = [&workspace, id](const json& arguments) {
      const auto page = knowledgeIndexFor(gotchasOf(workspace)).page(id);
      if (!page) throw RpcFailure(rpc_error::kInvalidParams, "the skill " + id + " is gone");
      std::string text = page->body;
      if (arguments.contains("task")) {
        if (!arguments["task"].is_string()) {
          throw RpcFailure(rpc_error::kInvalidParams, "argument task must be a string");
        }
        text += "\n\nApply this skill to: " + arguments["task"].get<std::string>() + "\n";
      }
      return json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}});
    };
    prompt.complete = [](const std::string&, const std::string&) {
      return std::vector<std::string>{};
    };
    catalog.prompts.push_back(std::move(prompt));
  }
}

}  // namespace stickler
