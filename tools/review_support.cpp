#include "tools/review_support.h"

#include <filesystem>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "tools/adapter_support.h"

namespace stickler {

using nlohmann::json;

ProposalStore openReviewStore(OperationContext& context) {
  const std::filesystem::path catalog = workspaceCatalogDir(context);
  if (!std::filesystem::exists(catalog / ".git")) {
    throw UserError("no adapter catalog in this workspace (" + catalog.string() +
                    "): draft the adapters first (draft_adapter)");
  }
  return ProposalStore((catalog / ".git" / "stickler-reviews.sqlite").string());
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

json proposalDocument(const Proposal& proposal) {
  json document = proposalToJson(proposal);
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
