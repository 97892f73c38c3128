// Approving a proposal: the gate, then the merge into the catalog's main, journaled so that a
// crash at any point leaves the old state or the new one (docs/review.md, "Durability").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/review/proposal_store.h"
#include "tools/framework/operation.h"
#include "tools/review/review_gate.h"

namespace stickler {

struct ApprovalOutcome {
  bool approved = false;
  Proposal proposal;
  GateRun gate;
  std::string commit;  // main's new tip when approved
};

// Gates proposal `id` (at `revision`, the current one when absent) and, when the gate passes,
// merges it into main with the reviewer (GIT_AUTHOR_*) and the gate's summary in the commit,
// then records the approval. A failed gate approves nothing and is returned, not thrown.
// ReviewConflict when the proposal changed since `revision` or another approval of it is under
// way; when main moves during the gate (another approval), the gate runs again on top of it.
ApprovalOutcome approveProposal(OperationContext& context, int64_t id,
                                std::optional<int64_t> revision, const std::string& comment,
                                const GateOptions& options);

// The gate alone, for a reviewer who wants its evidence before deciding: run (or found again)
// and stored, nothing approved.
GateRun gateProposal(OperationContext& context, int64_t id, const GateOptions& options);

// Finishes (main already moved) or rolls back (it did not) the approvals a crash interrupted,
// unless a live process holds the approval lock. Returns one line per approval it settled.
std::vector<std::string> recoverInterruptedApprovals(ProposalStore& store,
                                                     WorkspaceCatalog& catalog);

}  // namespace stickler
