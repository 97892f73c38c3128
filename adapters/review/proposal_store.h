// The review queue's record of proposals (issue 16): which draft adapters an agent proposes for
// the catalog, for which models, why, with what evidence, and what reviewers decided. A row per
// proposal and a log of every action, in SQLite (WAL) beside the workspace catalog; the
// adapters' commits live on the proposal's branch in the catalog repository.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "simulator/support/errors.h"
#include "simulator/support/sqlite_db.h"

namespace stickler {

enum class ProposalState { kPending, kChangesRequested, kApproved, kRejected, kSuperseded };
std::string stateName(ProposalState state);  // "pending", "changes_requested", ...
std::optional<ProposalState> stateNamed(const std::string& name);

struct ProposedAdapter {
  std::string name;
  std::string draft_tip;  // the commit of draft/<name> that was proposed
};

struct ModelClaim {
  std::string model;    // an archive path, as the agent gave it
  std::string profile;  // the device profile it is claimed to pass on
};

struct ReviewEvent {
  std::string time;    // ISO-8601 UTC
  std::string actor;   // "Name <email>"
  std::string action;  // submitted, changes_requested, rejected, approved, superseded, commented
  std::string comment;
};

struct NewProposal {
  std::vector<ProposedAdapter> adapters;
  std::vector<ModelClaim> claims;
  std::string rationale;
  std::vector<std::string> evidence;  // report ids
  std::string author;
  std::optional<int64_t> supersedes;  // a proposal this one answers (changes were requested)
};

struct Proposal {
  int64_t id = 0;
  ProposalState state = ProposalState::kPending;
  std::vector<ProposedAdapter> adapters;
  std::vector<ModelClaim> claims;
  std::string rationale;
  std::vector<std::string> evidence;
  std::string author;
  std::string submitted;
  std::string branch;  // proposals/<id>
  std::string commit;  // the branch's tip once written ("" before)
  std::optional<int64_t> supersedes;
  std::optional<int64_t> superseded_by;
  int64_t version = 0;  // grows with every change: a decision names the version it was made on
  std::vector<ReviewEvent> events;  // oldest first
};

// A run of the approval gate (tools/review/review_gate.h): what it was run on (`key`: the proposal's
// commit, main's, the models and the seed, hashed), whether it passed, and its report as JSON.
struct GateRecord {
  std::string key;
  bool passed = false;
  std::string result;  // JSON text
  std::string time;
};

// A model the catalog's main passed end to end on a profile: what the gate's regression run
// checks again before main changes.
struct KnownModel {
  std::string model;  // archive path
  std::string profile;
  std::string sha256;          // of the archive when it passed
  std::string catalog_commit;  // main's commit it passed with
  std::string time;
  std::string source;  // "proposal 3 (claimed)", "proposal 3 (regression)"
};

// An approval under way, journaled before main moves: what main was, what it becomes, who
// approved. Start-up finishes it (main already moved) or rolls it back (it did not).
struct ApprovalIntent {
  int64_t proposal = 0;
  std::string old_main;
  std::string new_main;
  std::string actor;
  std::string comment;  // the reviewer's, with the gate's summary
  std::string started;
};

// A decision made on a version of a proposal that has changed since (another reviewer acted).
class ReviewConflict : public UserError {
 public:
  using UserError::UserError;
};

// Throws ReviewConflict when `current` is no longer at `expected_version`: the decision was made
// on what the reviewer read, and something changed since.
void requireRevision(const Proposal& current, int64_t expected_version);

class ProposalStore {
 public:
  // Opens (creating) the store at `path`; ":memory:" for tests.
  explicit ProposalStore(const std::string& path);

  // What writing a proposal's branch produced: its tip and the draft tips it holds.
  struct WrittenBranch {
    std::string commit;
    std::vector<ProposedAdapter> adapters;
  };

  // Records a pending proposal (and, when it supersedes one, marks that one superseded: only a
  // pending proposal or one with changes requested can be). `write_branch` writes the branch
  // for the new id inside the same transaction: when it throws, nothing is recorded; when the
  // process dies before the commit, the id is unused and its branch an orphan that the next
  // proposal with that id overwrites.
  Proposal submit(const NewProposal& proposal, const std::string& now,
                  const std::function<WrittenBranch(int64_t id)>& write_branch);

  std::optional<Proposal> find(int64_t id);
  Proposal get(int64_t id);  // UserError naming the id when there is none
  // Newest first; without events unless asked (one query for the list, not one per proposal).
  std::vector<Proposal> list(std::optional<ProposalState> state = std::nullopt,
                             bool with_events = false);

  // A reviewer's decision on `expected_version` of the proposal: pending proposals may get
  // changes requested or be rejected; a proposal with changes requested may be rejected.
  // Approval is not a decision of its own: it goes through the gate and beginApproval.
  // ReviewConflict when the proposal moved on since that version; UserError when the decision does
  // not apply to its state.
  Proposal decide(int64_t id, int64_t expected_version, ProposalState decision,
                  const std::string& actor, const std::string& comment, const std::string& now);

  // The gate's results: stored whether it passed or not, found again by key so that an unchanged
  // proposal on an unchanged catalog is not gated twice.
  void storeGate(int64_t id, const GateRecord& gate);
  std::optional<GateRecord> findGate(int64_t id, const std::string& key);
  std::optional<GateRecord> latestGate(int64_t id);

  std::vector<KnownModel> knownModels();                          // by model, then profile
  void recordKnownModels(const std::vector<KnownModel>& models);  // replaces same model+profile

  // Approval in three steps around the move of main. begin: journals `intent` after checking
  // that the proposal is pending at `expected_version` (ReviewConflict otherwise, or when
  // another approval of it is under way); while journaled, no other decision can be made on it.
  void beginApproval(const ApprovalIntent& intent, int64_t expected_version);
  // finish: the proposal approved with the journaled actor and comment, `passed` recorded as
  // known models, the journal entry gone, all in one transaction. `note` is added to the
  // event's comment (how it was finished).
  Proposal finishApproval(int64_t id, const std::vector<KnownModel>& passed, const std::string& now,
                          const std::string& note = "");
  // abandon: the journal entry gone and the reason logged; the proposal stays pending.
  void abandonApproval(int64_t id, const std::string& why, const std::string& now);
  std::vector<ApprovalIntent> approvalsUnderWay();

  // SQLite's data_version: changes when another connection (another process's decision)
  // committed, so a server can poll for what to notify its subscribers of.
  int64_t dataVersion();

  // SQLite's integrity check: "ok" when the store is whole.
  std::string integrityCheck();

 private:
  Proposal readRow(sqlite::Statement& row, bool with_events = true);
  void addEvent(int64_t id, const ReviewEvent& event);
  void upsertKnownModel(const KnownModel& model);
  std::optional<ApprovalIntent> approvalUnderWay(int64_t id);

  sqlite::Database db_;
};

}  // namespace stickler
