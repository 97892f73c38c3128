// The review queue's record (issue 16): proposals, their states and decisions, supersession,
// and two reviewers acting at once.
#include "adapters/review/proposal_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

namespace stickler {
namespace {

NewProposal aProposal(const std::string& adapter = "pow-half-as-sqrt") {
  NewProposal proposal;
  proposal.adapters = {{adapter, ""}};  // the branch written gives the draft tips
  proposal.claims = {{"my-model.pt", "spyre-2025"}};
  proposal.rationale = "pow(x, 0.5) does not lower on spyre-2025; sqrt does";
  proposal.evidence = {"diagnose-my-model-1"};
  proposal.author = "Agent <agent@example.com>";
  return proposal;
}

// Stands in for the catalog writing proposals/<id>.
ProposalStore::WrittenBranch writeBranch(int64_t id) {
  return {"commit-for-" + std::to_string(id), {{"pow-half-as-sqrt", "tip-of-pow-half-as-sqrt"}}};
}

TEST(ProposalStore, ASubmittedProposalIsPendingWithItsBranchAndFirstEvent) {
  ProposalStore store(":memory:");
  const Proposal proposal = store.submit(aProposal(), "2026-12-01T12:00:00Z", writeBranch);
  EXPECT_EQ(proposal.state, ProposalState::kPending);
  EXPECT_EQ(proposal.branch, "proposals/" + std::to_string(proposal.id));
  ASSERT_EQ(proposal.adapters.size(), 1u);
  EXPECT_EQ(proposal.claims[0].profile, "spyre-2025");
  EXPECT_EQ(proposal.evidence, std::vector<std::string>{"diagnose-my-model-1"});
  ASSERT_EQ(proposal.events.size(), 1u);
  EXPECT_EQ(proposal.events[0].action, "submitted");
  EXPECT_FALSE(proposal.supersedes.has_value());
  EXPECT_EQ(proposal.commit, "commit-for-" + std::to_string(proposal.id));
  EXPECT_EQ(proposal.adapters[0].draft_tip, "tip-of-pow-half-as-sqrt");
  EXPECT_THROW(store.get(proposal.id + 1), UserError);
}

TEST(ProposalStore, AProposalNeedsAdaptersClaimsAndARationale) {
  ProposalStore store(":memory:");
  NewProposal empty = aProposal();
  empty.adapters.clear();
  EXPECT_THROW(store.submit(empty, "t", writeBranch), UserError);
  NewProposal unclaimed = aProposal();
  unclaimed.claims.clear();
  EXPECT_THROW(store.submit(unclaimed, "t", writeBranch), UserError);
  NewProposal silent = aProposal();
  silent.rationale.clear();
  EXPECT_THROW(store.submit(silent, "t", writeBranch), UserError);
  EXPECT_TRUE(store.list().empty());
}

TEST(ProposalStore, DecisionsFollowTheStatesAndNeedAReason) {
  ProposalStore store(":memory:");
  Proposal proposal = store.submit(aProposal(), "t0", writeBranch);
  EXPECT_THROW(store.decide(proposal.id, proposal.version, ProposalState::kChangesRequested,
                            "Reviewer <r@example.com>", "", "t1"),
               UserError);  // no comment
  proposal =
      store.decide(proposal.id, proposal.version, ProposalState::kChangesRequested,
                   "Reviewer <r@example.com>", "the condition does not check the slice", "t1");
  EXPECT_EQ(proposal.state, ProposalState::kChangesRequested);
  ASSERT_EQ(proposal.events.size(), 2u);
  EXPECT_EQ(proposal.events[1].comment, "the condition does not check the slice");
  EXPECT_EQ(proposal.events[1].actor, "Reviewer <r@example.com>");
  // Changes requested: it cannot be approved as it is; it can be rejected.
  EXPECT_THROW(store.decide(proposal.id, proposal.version, ProposalState::kApproved, "R", "", "t2"),
               UserError);
  proposal =
      store.decide(proposal.id, proposal.version, ProposalState::kRejected, "R", "abandoned", "t2");
  EXPECT_EQ(proposal.state, ProposalState::kRejected);
  EXPECT_THROW(store.decide(proposal.id, proposal.version, ProposalState::kApproved, "R", "", "t3"),
               UserError);  // a rejection is final
}

TEST(ProposalStore, AResubmissionSupersedesAndLinksTheOldProposal) {
  ProposalStore store(":memory:");
  Proposal first = store.submit(aProposal(), "t0", writeBranch);
  first = store.decide(first.id, first.version, ProposalState::kChangesRequested, "R",
                       "check the slice", "t1");
  NewProposal again = aProposal();
  again.supersedes = first.id;
  const Proposal second = store.submit(again, "t2", writeBranch);
  EXPECT_EQ(second.supersedes, first.id);
  const Proposal old = store.get(first.id);
  EXPECT_EQ(old.state, ProposalState::kSuperseded);
  EXPECT_EQ(old.superseded_by, second.id);
  EXPECT_EQ(old.events.back().action, "superseded");
  // A superseded (or decided) proposal cannot be superseded again; nothing is recorded then.
  NewProposal stale = aProposal();
  stale.supersedes = first.id;
  EXPECT_THROW(store.submit(stale, "t3", writeBranch), UserError);
  EXPECT_EQ(store.list().size(), 2u);
  EXPECT_EQ(store.list(ProposalState::kPending).size(), 1u);
  EXPECT_EQ(store.list().front().id, second.id);  // newest first
}

TEST(ProposalStore, ABranchThatCannotBeWrittenRecordsNothing) {
  ProposalStore store(":memory:");
  Proposal first = store.submit(aProposal(), "t0", writeBranch);
  first = store.decide(first.id, first.version, ProposalState::kChangesRequested, "R",
                       "check the slice", "t1");
  NewProposal again = aProposal();
  again.supersedes = first.id;
  EXPECT_THROW(store.submit(again, "t2",
                            [](int64_t) -> ProposalStore::WrittenBranch {
                              throw UserError("draft/x changes nothing against main");
                            }),
               UserError);
  EXPECT_EQ(store.list().size(), 1u);
  EXPECT_EQ(store.get(first.id).state, ProposalState::kChangesRequested);
  EXPECT_FALSE(store.get(first.id).superseded_by.has_value());
  // The id is not burnt: the next proposal takes it.
  EXPECT_EQ(store.submit(aProposal(), "t3", writeBranch).id, first.id + 1);
}

TEST(ProposalStore, TwoReviewersActingAtOnceGetOneSuccessAndOneConflict) {
  const std::string path =
      ::testing::TempDir() + "reviews-" + std::to_string(::getpid()) + "/reviews.sqlite";
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  const Proposal proposal = ProposalStore(path).submit(aProposal(), "t0", writeBranch);
  // Each reviewer has read version 1 and acts on it, from its own connection (two processes'
  // worth: the page and the command line).
  std::vector<std::string> outcomes(2);
  std::vector<std::thread> reviewers;
  const ProposalState decisions[] = {ProposalState::kRejected, ProposalState::kChangesRequested};
  for (int i = 0; i < 2; ++i) {
    reviewers.emplace_back([&, i] {
      try {
        ProposalStore store(path);
        store.decide(proposal.id, proposal.version, decisions[i], "Reviewer " + std::to_string(i),
                     "reason " + std::to_string(i), "t1");
        outcomes[i] = "ok";
      } catch (const ReviewConflict& e) {
        outcomes[i] = "conflict";
      } catch (const std::exception& e) {
        outcomes[i] = e.what();
      }
    });
  }
  for (auto& reviewer : reviewers) reviewer.join();
  EXPECT_EQ((outcomes[0] == "ok") + (outcomes[1] == "ok"), 1)
      << outcomes[0] << " / " << outcomes[1];
  EXPECT_EQ((outcomes[0] == "conflict") + (outcomes[1] == "conflict"), 1)
      << outcomes[0] << " / " << outcomes[1];
  ProposalStore store(path);
  EXPECT_EQ(store.get(proposal.id).events.size(), 2u);  // one decision recorded, not two
  EXPECT_EQ(store.integrityCheck(), "ok");
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(ProposalStore, AnApprovalIsJournaledThenFinishedOrAbandonedAndBlocksOtherDecisions) {
  ProposalStore store(":memory:");
  Proposal proposal = store.submit(aProposal(), "t0", writeBranch);
  // Approval is never a plain decision: it goes through the gate and the journal.
  EXPECT_THROW(store.decide(proposal.id, proposal.version, ProposalState::kApproved, "R", "", "t1"),
               UserError);
  const ApprovalIntent intent{proposal.id,   "old", "new", "Rita <r@example.com>",
                              "looks right", "t1"};
  EXPECT_THROW(store.beginApproval(intent, proposal.version + 1), ReviewConflict);
  store.beginApproval(intent, proposal.version);
  EXPECT_THROW(store.beginApproval(intent, proposal.version), ReviewConflict);
  EXPECT_THROW(
      store.decide(proposal.id, proposal.version, ProposalState::kRejected, "S", "no", "t2"),
      ReviewConflict);
  ASSERT_EQ(store.approvalsUnderWay().size(), 1u);
  EXPECT_EQ(store.approvalsUnderWay()[0].new_main, "new");

  // Abandoned: still pending, the reason logged, a new version to decide on.
  store.abandonApproval(proposal.id, "main moved", "t3");
  proposal = store.get(proposal.id);
  EXPECT_EQ(proposal.state, ProposalState::kPending);
  EXPECT_EQ(proposal.events.back().action, "approval_rolled_back");
  EXPECT_TRUE(store.approvalsUnderWay().empty());

  store.beginApproval(intent, proposal.version);
  proposal = store.finishApproval(
      proposal.id, {{"m.pt", "spyre-2026", "abc", "new", "t4", "proposal 1 (claimed)"}}, "t4",
      "finished at start-up");
  EXPECT_EQ(proposal.state, ProposalState::kApproved);
  EXPECT_EQ(proposal.events.back().actor, "Rita <r@example.com>");
  EXPECT_NE(proposal.events.back().comment.find("finished at start-up"), std::string::npos);
  ASSERT_EQ(store.knownModels().size(), 1u);
  EXPECT_EQ(store.knownModels()[0].catalog_commit, "new");
  EXPECT_TRUE(store.approvalsUnderWay().empty());
  EXPECT_THROW(store.finishApproval(proposal.id, {}, "t5"), UserError);
}

TEST(ProposalStore, GateRunsAreFoundAgainByKey) {
  ProposalStore store(":memory:");
  const Proposal proposal = store.submit(aProposal(), "t0", writeBranch);
  EXPECT_FALSE(store.latestGate(proposal.id));
  store.storeGate(proposal.id, {"k1", false, R"({"passed":false})", "2026-01-01T00:00:00Z"});
  store.storeGate(proposal.id, {"k2", true, R"({"passed":true})", "2026-01-02T00:00:00Z"});
  EXPECT_FALSE(store.findGate(proposal.id, "k1")->passed);
  EXPECT_TRUE(store.findGate(proposal.id, "k2")->passed);
  EXPECT_FALSE(store.findGate(proposal.id, "k3"));
  EXPECT_EQ(store.latestGate(proposal.id)->key, "k2");
}

TEST(ProposalStore, AHandEditedRowIsNamedAsDamagedNotACrash) {
  const std::string path =
      ::testing::TempDir() + "reviews-damaged-" + std::to_string(::getpid()) + "/reviews.sqlite";
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  const Proposal proposal = ProposalStore(path).submit(aProposal(), "t0", writeBranch);
  for (const char* damaged : {R"([1])", R"([{"name": 5}])", R"({"name": "x"})"}) {
    SCOPED_TRACE(damaged);
    sqlite::Database db(path, "the test's view of the queue");
    sqlite::Statement edit(db, "UPDATE proposals SET adapters = ? WHERE id = ?");
    edit.bind(1, std::string(damaged)).bind(2, proposal.id).step();
    ProposalStore store(path);
    try {
      store.get(proposal.id);
      ADD_FAILURE() << "a damaged row was read";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stickler
