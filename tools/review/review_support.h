// What the review queue's tools share: the workspace's queue, and how a proposal is reported.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "adapters/review/proposal_store.h"
#include "tools/framework/operation.h"

namespace stickler {

// The queue beside the workspace catalog: stickler-adapters/.git/stickler-reviews.sqlite, so
// that the catalog and the decisions about it travel together. UserError when the workspace has
// no catalog yet.
ProposalStore openReviewStore(OperationContext& context);

nlohmann::json proposalToJson(const Proposal& proposal);
// The same as a document of its own (schema stickler.proposal), with the last gate run's
// verdict when there was one, and that document's schema.
nlohmann::json proposalDocument(const Proposal& proposal,
                                const std::optional<GateRecord>& gate = std::nullopt);
// A stored gate run as a proposal shows it: passed, when, the problems, the summary.
nlohmann::json gateVerdictToJson(const GateRecord& gate);
nlohmann::json proposalOutputSchema();

// What the agent (or the reviewer) can do next with a proposal in its state.
std::string nextForProposal(const Proposal& proposal);

}  // namespace stickler
