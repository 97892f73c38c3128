// submit_for_review: an agent proposes draft adapters for the catalog, with the models they
// bring up, its rationale and its evidence. A reviewer decides (stickler review ...).
#include <algorithm>
#include <filesystem>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "simulator/support/git_support.h"
#include "simulator/support/text_format.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/report_store.h"
#include "tools/review/review_support.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  NewProposal proposal;
  std::vector<std::string> names;
  for (const auto& name : input.at("adapters")) {
    const std::string adapter = name.get<std::string>();
    WorkspaceCatalog::validateName(adapter);
    if (std::find(names.begin(), names.end(), adapter) != names.end()) {
      throw UserError("adapter " + adapter + " is named twice");
    }
    names.push_back(adapter);
    proposal.adapters.push_back({adapter, ""});
  }
  profileFromInput(input, context);  // a profile that does not load is no claim
  // Paths as absolute ones: the gate runs them from the reviewer's process, wherever it runs.
  std::string profile = resolveProfile(requireString(input, "profile"), context);
  if (profile.find('/') != std::string::npos || profile.ends_with(".json")) {
    profile = std::filesystem::absolute(profile).lexically_normal().string();
  }
  for (const auto& model : input.at("models")) {
    const std::string path = context.resolvePath(model.get<std::string>());
    if (!std::filesystem::is_regular_file(path)) {
      throw UserError("model " + model.get<std::string>() + ": no such archive");
    }
    proposal.claims.push_back(
        {std::filesystem::absolute(path).lexically_normal().string(), profile});
  }
  const ReportStore reports(context.workspaceRoot());
  const std::vector<std::string> saved = reports.ids();
  for (const auto& id : optionalStrings(input, "evidence")) {
    if (std::find(saved.begin(), saved.end(), id) == saved.end()) {
      throw UserError("evidence " + id + ": no saved report with that id (get_report lists them)");
    }
    proposal.evidence.push_back(id);
  }
  proposal.rationale = requireString(input, "rationale");
  proposal.author = git::authorIdentity();
  if (input.contains("supersedes")) proposal.supersedes = input["supersedes"].get<int64_t>();

  WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  ProposalStore store = openReviewStore(context);
  const Proposal submitted = store.submit(proposal, isoTimeUtcNow(), [&](int64_t id) {
    const auto written = catalog.propose(std::to_string(id), names, proposal.rationale);
    ProposalStore::WrittenBranch branch{written.commit, {}};
    for (const auto& [name, tip] : written.draft_tips) branch.adapters.push_back({name, tip});
    return branch;
  });
  return proposalDocument(submitted);
}

std::string renderText(const json& output) {
  std::string adapters;
  for (const auto& adapter : output["adapters"]) {
    adapters += (adapters.empty() ? "" : ", ") + adapter["name"].get<std::string>();
  }
  return "proposal " + std::to_string(output["id"].get<int64_t>()) + " (" +
         output["state"].get<std::string>() + "): " + adapters + " on " +
         output["branch"].get<std::string>() + "\n" + output["next"].get<std::string>() + "\n";
}

}  // namespace

Operation makeSubmitForReviewOperation() {
  Operation operation;
  operation.name = "submit_for_review";
  operation.title = "Submit draft adapters for review";
  operation.description =
      "Propose draft adapters from the workspace catalog for its main, where every model gets "
      "them: a reviewer decides, not the agent. Give the drafts, the models they bring up on "
      "the profile, the rationale (what gap, why the rewrite is right, what a reviewer should "
      "look at) and the evidence (report ids from diagnose_model and localize_divergence). The "
      "proposal becomes branch proposals/<id> in the catalog (main with the drafts merged) and a "
      "pending entry of the review queue; review_status follows it. To answer a request for "
      "changes, draft the changes and submit again with supersedes.";
  json schema = {{"type", "object"},
                 {"required", {"adapters", "models", "rationale"}},
                 {"additionalProperties", false}};
  schema["properties"]["adapters"] = {{"type", "array"},
                                      {"items", {{"type", "string"}}},
                                      {"minItems", 1},
                                      {"description", "The draft adapters proposed, by name."}};
  schema["properties"]["models"] = {
      {"type", "array"},
      {"items", {{"type", "string"}}},
      {"minItems", 1},
      {"description",
       "Model archives the adapters bring up on the profile (checked end to end "
       "when a reviewer approves)."}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["rationale"] = {
      {"type", "string"},
      {"minLength", 1},
      {"description", "Why: the gap, why the rewrite computes the same thing, what to look at."}};
  schema["properties"]["evidence"] = {
      {"type", "array"},
      {"items", {{"type", "string"}}},
      {"description", "Saved report ids (diagnose_model, localize_divergence) that show it."}};
  schema["properties"]["supersedes"] = {
      {"type", "integer"},
      {"minimum", 1},
      {"description", "The proposal this one answers (changes were requested on it)."}};
  operation.input_schema = schema;
  operation.output_schema = proposalOutputSchema();
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = false};
  operation.cli = {"review submit",
                   {},
                   {{"adapters", "adapter"}, {"models", "model"}, {"evidence", "evidence"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
