#include "tools/review/review_approval.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "simulator/support/git_support.h"
#include "simulator/support/text_format.h"
#include "tools/adapters/adapter_support.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

using nlohmann::json;

// Tests kill the approving process at named points (STICKLER_TEST_CRASH_AT) to show that a
// crash there loses nothing.
void crashPoint(const char* point) {
  const char* wanted = std::getenv("STICKLER_TEST_CRASH_AT");
  if (wanted != nullptr && std::strcmp(wanted, point) == 0) ::raise(SIGKILL);
}

// An exclusive flock on the catalog's approval lock file: held from the journal entry until the
// decision is recorded, so that recovery never settles an approval a live process is making.
// The kernel drops it when its holder dies.
class ApprovalLock {
 public:
  ApprovalLock(const std::filesystem::path& catalog_dir, bool wait) {
    const std::string path = (catalog_dir / ".git" / "stickler-approval.lock").string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw UserError("cannot open " + path + ": " + std::strerror(errno));
    }
    int rc = 0;
    while ((rc = ::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB))) != 0 && errno == EINTR) {
    }
    held_ = rc == 0;
  }
  ~ApprovalLock() { ::close(fd_); }
  ApprovalLock(const ApprovalLock&) = delete;
  ApprovalLock& operator=(const ApprovalLock&) = delete;
  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

// The models the gate saw pass: what the catalog's new main is known to pass.
std::vector<KnownModel> passedModels(const json& gate, int64_t id, const std::string& main,
                                     const std::string& now) {
  std::vector<KnownModel> models;
  if (!gate.contains("models")) return models;
  for (const json& entry : gate["models"]) {
    if (entry.value("status", "") != "completed" || entry.value("verdict", "") != "pass") continue;
    models.push_back(
        {entry["model"], entry["profile"], entry.value("sha256", ""), main, now,
         "proposal " + std::to_string(id) + " (" + entry["role"].get<std::string>() + ")"});
  }
  return models;
}

std::string approvalText(const Proposal& proposal, const std::string& reviewer,
                         const std::string& comment, const json& gate) {
  std::string names;
  for (const auto& adapter : proposal.adapters) names += (names.empty() ? "" : ", ") + adapter.name;
  std::string text = "Approve proposal " + std::to_string(proposal.id) + ": " + names + "\n\n" +
                     proposal.rationale + "\n\nReviewed by " + reviewer;
  if (!comment.empty()) text += ": " + comment;
  return text + "\n\nGate " + gateSummary(gate);
}

// Settles every journaled approval; the caller holds the approval lock, so none is live.
std::vector<std::string> settleApprovals(ProposalStore& store, WorkspaceCatalog& catalog) {
  std::vector<std::string> settled;
  const std::string now = isoTimeUtcNow();
  for (const ApprovalIntent& intent : store.approvalsUnderWay()) {
    const std::string id = std::to_string(intent.proposal);
    if (catalog.mainCommit() == intent.new_main) {
      const auto gate = store.latestGate(intent.proposal);
      store.finishApproval(
          intent.proposal,
          passedModels(gate ? json::parse(gate->result) : json::object(), intent.proposal,
                       intent.new_main, now),
          now,
          "(recorded after an interruption: main had already moved to " + intent.new_main + ")");
      settled.push_back("proposal " + id + ": the interrupted approval was finished");
    } else {
      store.abandonApproval(intent.proposal,
                            "the approval was interrupted before the catalog's main moved: "
                            "nothing entered main and the proposal is pending again",
                            now);
      settled.push_back("proposal " + id + ": the interrupted approval was rolled back");
    }
  }
  return settled;
}

}  // namespace

std::vector<std::string> recoverInterruptedApprovals(ProposalStore& store,
                                                     WorkspaceCatalog& catalog) {
  if (store.approvalsUnderWay().empty()) return {};
  const ApprovalLock lock(catalog.dir(), /*wait=*/false);
  if (!lock.held()) return {};  // a live approval: its process settles it
  return settleApprovals(store, catalog);
}

GateRun gateProposal(OperationContext& context, int64_t id, const GateOptions& options) {
  ProposalStore store = openReviewStore(context);
  const WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  const Proposal proposal = store.get(id);
  if (proposal.state != ProposalState::kPending) {
    throw UserError("proposal " + std::to_string(id) + " is " + stateName(proposal.state) +
                    ": the gate runs for pending proposals");
  }
  return runGate(context, store, proposal, catalog, catalog.planApproval(proposal.commit), options);
}

ApprovalOutcome approveProposal(OperationContext& context, int64_t id,
                                std::optional<int64_t> revision, const std::string& comment,
                                const GateOptions& options) {
  ProposalStore store = openReviewStore(context);
  WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  const std::string reviewer = git::authorIdentity();
  ApprovalOutcome outcome;
  outcome.proposal = store.get(id);
  const int64_t expected = revision.value_or(outcome.proposal.version);
  // Main may move while the gate runs (another approval): then the gate runs again on top of
  // it, so that what enters main is what was gated.
  for (int attempt = 0;; ++attempt) {
    outcome.proposal = store.get(id);
    requireRevision(outcome.proposal, expected);
    if (outcome.proposal.state != ProposalState::kPending) {
      throw UserError("proposal " + std::to_string(id) + " is " +
                      stateName(outcome.proposal.state) +
                      ": only a pending proposal can be approved");
    }
    const WorkspaceCatalog::ApprovalPlan plan = catalog.planApproval(outcome.proposal.commit);
    outcome.gate = runGate(context, store, outcome.proposal, catalog, plan, options);
    crashPoint("gate-stored");
    if (!outcome.gate.passed) return outcome;

    const ApprovalLock lock(catalog.dir(), /*wait=*/true);
    settleApprovals(store, catalog);  // a crashed approval of another proposal
    if (catalog.mainCommit() != plan.main) {
      if (attempt < 3) continue;
      throw ReviewConflict("the catalog's main keeps moving during the gate: approve again");
    }
    const std::string text = approvalText(outcome.proposal, reviewer, comment, outcome.gate.report);
    const std::string commit = catalog.writeApproval(
        plan, outcome.proposal.commit, text,
        {{"Proposal", std::to_string(id)},
         {"Reviewed-by", reviewer},
         {"Gate", "passed " + outcome.gate.key}});
    crashPoint("commit-written");
    const std::string now = isoTimeUtcNow();
    std::string decision = comment.empty() ? "approved" : comment;
    decision += "\n\nGate " + gateSummary(outcome.gate.report);
    store.beginApproval({id, plan.main, commit, reviewer, decision, now}, expected);
    crashPoint("journaled");
    try {
      catalog.advanceMain(commit, plan.main);
    } catch (const UserError& error) {
      store.abandonApproval(id, std::string("main could not be moved: ") + error.what(), now);
      throw;
    }
    crashPoint("main-moved");
    outcome.proposal =
        store.finishApproval(id, passedModels(outcome.gate.report, id, commit, now), now);
    outcome.approved = true;
    outcome.commit = commit;
    return outcome;
  }
}

}  // namespace stickler
