#include "tools/review/review_support.h"

#include <filesystem>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "tools/adapters/adapter_support.h"
#include "tools/review/review_approval.h"
#include "tools/review/review_gate.h"

namespace stickler {

using nlohmann::json;

ProposalStore openReviewStore(OperationContext& context) {
  const std::filesystem::path catalog = workspaceCatalogDir(context);
  if (!std::filesystem::exists(catalog / ".git")) {
    throw UserError("no adapter catalog in this workspace (" + catalog.string() +
                    "): draft the adapters first (draft_adapter)");
  }
  ProposalStore store((catalog / ".git" / "stickler-reviews.sqlite").string());
  if (!store.approvalsUnderWay().empty()) {
    WorkspaceCatalog repository = WorkspaceCatalog::open(catalog);
    recoverInterruptedApprovals(store, repository);
  }
  return store;
}

json proposalToJson(const Proposal& proposal) {
  json adapters = json::array();
  for (const auto& adapter : proposal.adapters) {
    adapters.push_back({{"name", adapter.name}, {"draft_tip", adapter.draft_tip}});
  }
  json claims = json::array();
  for (const auto& claim : proposal.claims) {
    claims.push_back({{"model", claim.model}, {"profile", claim.profile}});
  }
  json events = json::array();
  for (const auto& event : proposal.events) {
    events.push_back({{"time", event.time},
                      {"actor", event.actor},
                      {"action", event.action},
                      {"comment", event.comment}});
  }
  return {{"id", proposal.id},
          {"state", stateName(proposal.state)},
          {"revision", proposal.version},  // grows with every change: decisions name it
          {"adapters", adapters},
          {"claims", claims},
          {"rationale", proposal.rationale},
          {"evidence", proposal.evidence},
          {"author", proposal.author},
          {"submitted", proposal.submitted},
          {"branch", proposal.branch},
          {"commit", proposal.commit},
          {"supersedes", proposal.supersedes ? json(*proposal.supersedes) : json()},
          {"superseded_by", proposal.superseded_by ? json(*proposal.superseded_by) : json()},
          {"events", events},
          {"next", nextForProposal(proposal)}};
}

json gateVerdictToJson(const GateRecord& gate) {
  const json report = json::parse(gate.result, nullptr, /*allow_exceptions=*/false);
  json verdict = {{"passed", gate.passed}, {"time", gate.time}, {"key", gate.key}};
  if (report.is_object()) {
    verdict["problems"] = report.value("problems", json::array());
    verdict["summary"] = gateSummary(report);
    verdict["seed"] = report.value("seed", json());
  }
  return verdict;
}

json proposalDocument(const Proposal& proposal, const std::optional<GateRecord>& gate) {
  json document = proposalToJson(proposal);
  document["gate"] = gate ? gateVerdictToJson(*gate) : json();
  document["schema"] = "stickler.proposal";
  document["version"] = 1;
  return document;
}

json proposalOutputSchema() {
  return {{"type", "object"},
          {"properties",
           {{"schema", {{"const", "stickler.proposal"}}},
            {"id", {{"type", "integer"}}},
            {"state", {{"type", "string"}}},
            {"branch", {{"type", "string"}}},
            {"events", {{"type", "array"}}},
            {"next", {{"type", "string"}}}}},
          {"required", {"schema", "id", "state", "branch", "events"}}};
}

std::string nextForProposal(const Proposal& proposal) {
  const std::string id = std::to_string(proposal.id);
  switch (proposal.state) {
    case ProposalState::kPending:
      if (!proposal.events.empty() && proposal.events.back().action == "approval_rolled_back") {
        return "an approval was interrupted and rolled back; waiting for a reviewer (stickler "
               "review approve " +
               id + ")";
      }
      return "waiting for a reviewer (stickler review show " + id + "); review_status " + id +
             " shows their decision";
    case ProposalState::kChangesRequested:
      return "read the reviewer's comment in events, draft the changes (draft_adapter), record "
             "fresh evidence, then submit_for_review again with supersedes " +
             id;
    case ProposalState::kApproved:
      return "approved: the adapters are on the catalog's main";
    case ProposalState::kRejected:
      return "rejected: the comment in events says why";
    case ProposalState::kSuperseded:
      return "superseded by proposal " +
             (proposal.superseded_by ? std::to_string(*proposal.superseded_by) : "?");
  }
  return "";
}

}  // namespace stickler
