// The approval gate (issue 16): before a proposal enters the catalog's main, Stickler itself
// re-runs what the agent claimed, on input draws the agent never used, and the models the
// catalog already passed, each in a worker process with a timeout. docs/review.md, "The gate".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/review/proposal_store.h"
#include "tools/framework/operation.h"

namespace stickler {

struct GateOptions {
  double model_seconds = 600;     // one model's worker: load, adapt, check, run
  size_t regression_sample = 20;  // known models beyond this many are sampled
  // Decoders (a card with a decode interface) whose forward passes are judged by this many
  // greedy decode steps after adapting, as the reference project's end-to-end tests judge them.
  int64_t decode_steps = 4;
};

struct GateRun {
  std::string key;  // what it was run on, hashed: an equal key is an equal gate
  bool passed = false;
  bool reused = false;    // found in the store, not run again
  nlohmann::json report;  // schema stickler.gate
};

// One gate entry's verdict for a reviewer: "pass", "pass through 4 decode steps", "fail at
// decode step 2 of 4", or the check's status when it did not complete.
std::string gateVerdictText(const nlohmann::json& entry);

// The gate for `proposal` on `plan` (main with the proposal's adapters): found in the store
// when run before on the same proposal, catalog and models; else run and stored.
GateRun runGate(OperationContext& context, ProposalStore& store, const Proposal& proposal,
                const WorkspaceCatalog& catalog, const WorkspaceCatalog::ApprovalPlan& plan,
                const GateOptions& options);

// The input draws' seed the gate uses for a proposal on a main: never 0, 1 or 2 (the draws
// every tool uses), derived from both commits so that it is the same when run again.
uint64_t gateSeed(const std::string& proposal_commit, const std::string& main_commit);

// Runs `models` on `profile` with the catalog's main, each in a worker as the gate does (the
// example inputs every tool uses), and records those that pass as known models: the gate's
// regression set before approvals have grown it. Returns each model's result (schema
// stickler.baseline).
nlohmann::json baselineModels(OperationContext& context, ProposalStore& store,
                              const WorkspaceCatalog& catalog,
                              const std::vector<std::string>& models, const std::string& profile,
                              const GateOptions& options);

// The check's worker side: the "gate_check" job.
void registerGateJob();

// One paragraph for the approval commit and the decision: what ran and what it found.
std::string gateSummary(const nlohmann::json& report);

}  // namespace stickler
