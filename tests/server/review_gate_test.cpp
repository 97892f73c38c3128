// The approval gate and the merge into main (issue 16): what an agent claims is run again by
// Stickler before a reviewer's approval takes effect, on fresh input draws and on the models the
// catalog already passed; and an approval killed at any point loses nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/equivalence/region_program.h"
#include "adapters/review/proposal_store.h"
#include "simulator/graph/loaded_model.h"
#include "tests/build_paths.h"
#include "tests/server/workspace_server.h"
#include "tests/unit/catalog_copy.h"
#include "tests/unit/scoped_environment.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string shipped(const std::string& name) {
  return slurp(shippedCatalogDir() + "/" + name + ".py");
}

struct Command {
  int status = -1;  // the exit status; -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

class ReviewGate : public WorkspaceServerTest {
 protected:
  // A command in the workspace, as a reviewer runs it (`env` before it: crash hooks).
  Command shell(const std::string& command, const std::string& env = "") {
    const std::string out = workspace_ + "/.cmd.out";
    const std::string err = workspace_ + "/.cmd.err";
    const std::string line = "cd '" + workspace_ +
                             "' && export GIT_AUTHOR_NAME=Rita GIT_AUTHOR_EMAIL=rita@example.com " +
                             env + " && { " + command + "; } >'" + out + "' 2>'" + err + "'";
    const int raw = std::system(line.c_str());
    Command run;
    // sh reports a child killed by signal N as exit status 128 + N.
    const int code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    if (code > 128) {
      run.signal = code - 128;
    } else {
      run.status = code;
    }
    run.out = slurp(out);
    run.err = slurp(err);
    return run;
  }
  Command reviewer(const std::string& args, const std::string& env = "") {
    return shell(std::string(testing::kSticklerBinary) + " " + args, env);
  }
  json reviewerJson(const std::string& args) {
    const Command run = reviewer(args + " --json");
    json parsed = json::parse(run.out, nullptr, false);
    if (!parsed.is_object()) ADD_FAILURE() << args << ": " << run.out << run.err;
    return parsed;
  }

  void draft(const std::string& name, const std::string& source) {
    const json drafted =
        call("draft_adapter", {{"name", name}, {"source", source}, {"reason", "Draft " + name}});
    ASSERT_FALSE(drafted.value("isError", false)) << drafted.dump().substr(0, 600);
  }
  int submit(const std::vector<std::string>& adapters,
             const std::vector<std::pair<std::string, std::string>>& claims) {
    // One claim per call: submit_for_review takes one profile for its models.
    json arguments = {{"adapters", adapters},
                      {"models", json::array()},
                      {"profile", claims.at(0).second},
                      {"rationale", "Bring gpt2 up"}};
    for (const auto& claim : claims) arguments["models"].push_back(claim.first);
    const json submitted = call("submit_for_review", arguments);
    EXPECT_FALSE(submitted.value("isError", false)) << submitted.dump().substr(0, 600);
    return submitted.at("structuredContent").at("id").get<int>();
  }
  std::string mainCommit() {
    return WorkspaceCatalog::open(workspace_ + "/stickler-adapters").mainCommit();
  }
  std::string storePath() { return workspace_ + "/stickler-adapters/.git/stickler-reviews.sqlite"; }
  // git fsck: no error, missing or broken object (dangling objects of refused or interrupted
  // approvals are not damage).
  void expectCatalogWhole() {
    const Command fsck = shell("git -C stickler-adapters fsck --full --strict");
    EXPECT_EQ(fsck.status, 0) << fsck.out << fsck.err;
    for (const char* damage : {"error", "missing", "broken", "corrupt"}) {
      EXPECT_EQ((fsck.out + fsck.err).find(damage), std::string::npos) << fsck.out << fsck.err;
    }
    EXPECT_EQ(ProposalStore(storePath()).integrityCheck(), "ok");
  }
};

// pow-cube-as-mul as shipped, reworded: the same rewrite, so it is a real draft to propose.
std::string cubeDraft(int round) {
  return shipped("pow-cube-as-mul") + "\n# reworded, round " + std::to_string(round) + "\n";
}

TEST_F(ReviewGate, AClaimedModelThatFailsEndToEndCannotBeApproved) {
  // A profile on which gpt2's attention aborts on the device, whatever the adapters do.
  std::ofstream(workspace_ + "/abort-softmax.json") << R"({
    "version": 1, "extends": "spyre-2025-clean", "name": "test-abort-softmax",
    "description": "Test profile: the device aborts in every softmax.",
    "faults": [{"id": "softmax-abort", "match": {"op": "aten::softmax"},
                "effect": {"kind": "runtime_abort", "message": "softmax_kernel: assertion failed"}}]
  })";
  draft("pow-cube-as-mul", cubeDraft(1));
  const int id =
      submit({"pow-cube-as-mul"}, {{testing::zooPath("gpt2-tiny.pt"), "abort-softmax.json"}});
  const std::string main_before = mainCommit();

  const Command refused = reviewer("review approve " + std::to_string(id) + " --comment ok");
  EXPECT_EQ(refused.status, 1) << refused.out << refused.err;
  EXPECT_NE(refused.out.find("NOT approved"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("aborted"), std::string::npos) << refused.out;
  EXPECT_EQ(mainCommit(), main_before);
  const json status = call("review_status", {{"id", id}}).at("structuredContent");
  EXPECT_EQ(status.at("state"), "pending");
  EXPECT_FALSE(status.at("gate").at("passed").get<bool>());
  ASSERT_FALSE(status.at("gate").at("problems").empty());
  EXPECT_NE(status.at("gate").at("problems").dump().find("gpt2-tiny.pt"), std::string::npos);

  // Nothing changed: the stored result is the answer, not a second run.
  const json again = reviewerJson("review approve " + std::to_string(id));
  EXPECT_FALSE(again.at("approved").get<bool>());
  EXPECT_TRUE(again.at("gate").at("reused").get<bool>());
  EXPECT_EQ(mainCommit(), main_before);

  // Submitted from the command line with relative paths, the claim holds absolute ones: the
  // gate runs it from the reviewer's process, wherever that runs.
  std::filesystem::copy_file(testing::zooPath("gpt2-tiny.pt"), workspace_ + "/gpt2-copy.pt");
  const json cli = reviewerJson(
      "review submit --adapter pow-cube-as-mul --model gpt2-copy.pt --profile abort-softmax.json "
      "--rationale 'from the command line'");
  ASSERT_TRUE(cli.is_object());
  EXPECT_EQ(cli.at("claims").at(0).at("model"), workspace_ + "/gpt2-copy.pt");
  EXPECT_EQ(cli.at("claims").at(0).at("profile"), workspace_ + "/abort-softmax.json");
}

TEST_F(ReviewGate, AnAdapterEquivalentOnlyOnTheAgentsDrawsIsCaughtByTheFreshDraws) {
  // An adapter that is exact on the input draws every tool uses (seeds 0, 1, 2) and halves the
  // embeddings on any other: it recognizes those draws by their token ids' sum and first token.
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  const auto loaded = loadModel(model);
  std::string known = "(ids.sum() == 120)";  // the position ids, the same on every draw
  for (int draw = 0; draw < 3; ++draw) {
    const at::Tensor ids = drawInputs(*loaded, draw).at(0).toTensor();
    known += " | ((ids.sum() == " + std::to_string(ids.sum().item<int64_t>()) +
             ") & (ids[0, 0] == " + std::to_string(ids[0][0].item<int64_t>()) + "))";
  }
  draft("embedding-for-seen-inputs", R"("""Embeddings, exact only for the inputs it was tried on."""
import torch
from torch import Tensor

name = "embedding-for-seen-inputs"
gap = "none: a test of the gate's fresh input draws"
why = "it is not right: it is exact only on the draws the agent checked"
models = ["gpt2"]
profiles = ["spyre-2025-clean"]
remove_when = "never: it must not be approved"


def pattern(weight: Tensor, ids: Tensor, padding_idx: int, scale: bool, sparse: bool):
    return torch.embedding(weight, ids, padding_idx, scale, sparse)


def replacement(weight: Tensor, ids: Tensor, padding_idx: int, scale: bool, sparse: bool):
    out = torch.embedding(weight, ids, padding_idx, scale, sparse)
    return torch.where()" + known + R"(, out, out * 0.5)
)");
  // On the agent's draws it is accepted: the evidence an agent would bring looks right.
  const json applied = call("apply_adapter", {{"model", model},
                                              {"adapter", "embedding-for-seen-inputs"},
                                              {"profile", "spyre-2025-clean"}});
  ASSERT_FALSE(applied.value("isError", false)) << applied.dump().substr(0, 800);
  draft("pow-cube-as-mul", cubeDraft(1));
  const int id =
      submit({"embedding-for-seen-inputs", "pow-cube-as-mul"}, {{model, "spyre-2025-clean"}});

  const std::string main_before = mainCommit();
  const json refused = reviewerJson("review approve " + std::to_string(id));
  ASSERT_TRUE(refused.is_object());
  EXPECT_FALSE(refused.at("approved").get<bool>());
  EXPECT_GE(refused.at("gate").at("seed").get<uint64_t>(), 1000u);
  EXPECT_NE(refused.at("gate")
                .at("problems")
                .dump()
                .find("adapter embedding-for-seen-inputs was refused on"),
            std::string::npos)
      << refused.at("gate").at("problems").dump();
  EXPECT_EQ(mainCommit(), main_before);
}

TEST_F(ReviewGate, ASecondProposalOfTheSameAdapterIsGatedOnTopOfTheFirstAndItsRegressionBlocks) {
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  draft("pow-cube-as-mul", cubeDraft(1));
  const int first = submit({"pow-cube-as-mul"}, {{model, "spyre-2025-clean"}});
  // A second version, for the 2026 stack too: exp(0) * x * x * x, the same cube; but the 2025
  // stack cannot lower exp, so on it gpt2 no longer compiles.
  std::string second_source = shipped("pow-cube-as-mul");
  second_source.replace(second_source.find("return x * x * x"), 16,
                        "return torch.exp(torch.zeros_like(x)) * x * x * x");
  second_source.replace(second_source.find(R"(profiles = ["spyre-2025", "spyre-2025-clean"])"), 45,
                        R"(profiles = ["spyre-2025-clean", "spyre-2026-clean"])");
  draft("pow-cube-as-mul", second_source);
  const int second = submit({"pow-cube-as-mul"}, {{model, "spyre-2026-clean"}});

  const std::string main_before = mainCommit();
  const json approved =
      reviewerJson("review approve " + std::to_string(first) + " --comment 'the cube, as shipped'");
  ASSERT_TRUE(approved.is_object());
  ASSERT_TRUE(approved.at("approved").get<bool>()) << approved.at("gate").dump().substr(0, 800);
  EXPECT_NE(mainCommit(), main_before);
  EXPECT_EQ(approved.at("commit_on_main"), mainCommit());
  const Command message = shell("git -C stickler-adapters log -1 --format=%B main");
  EXPECT_NE(message.out.find("Reviewed-by: Rita <rita@example.com>"), std::string::npos)
      << message.out;
  EXPECT_NE(message.out.find("Gate passed"), std::string::npos) << message.out;
  EXPECT_NE(message.out.find("Stickler-Action: approve"), std::string::npos) << message.out;
  // The approved adapter is what main serves now.
  EXPECT_EQ(shell("git -C stickler-adapters show main:pow-cube-as-mul.py").out, cubeDraft(1));

  // The second proposal's own claim passes, but gpt2 on spyre-2025-clean, which main passed
  // since the first approval, would no longer compile: approval is refused.
  const json refused = reviewerJson("review approve " + std::to_string(second));
  ASSERT_TRUE(refused.is_object());
  EXPECT_FALSE(refused.at("approved").get<bool>());
  EXPECT_EQ(refused.at("gate").at("changed_on_main"), json::array({"pow-cube-as-mul"}));
  bool claim_passed = false;
  for (const json& entry : refused.at("gate").at("models")) {
    if (entry.at("role") == "claimed") claim_passed = entry.value("verdict", "") == "pass";
  }
  EXPECT_TRUE(claim_passed) << refused.at("gate").at("models").dump().substr(0, 800);
  const std::string problems = refused.at("gate").at("problems").dump();
  EXPECT_NE(problems.find("regression: " + model + " on spyre-2025-clean"), std::string::npos)
      << problems;
  EXPECT_NE(problems.find("blocked"), std::string::npos) << problems;
  EXPECT_EQ(call("review_status", {{"id", second}}).at("structuredContent").at("state"), "pending");
  expectCatalogWhole();
}

TEST_F(ReviewGate, ABaselineGivesTheGateItsRegressionSetBeforeAnyApproval) {
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  draft("pow-cube-as-mul", cubeDraft(1));  // makes the catalog; main is still the shipped one
  // What main passes is recorded; what it does not is reported and left out.
  const json baseline =
      reviewerJson("review baseline --model " + model + " --model " +
                   testing::zooPath("no-such-model.pt") + " --profile spyre-2025-clean");
  ASSERT_TRUE(baseline.is_object());
  ASSERT_EQ(baseline.at("models").size(), 2u);
  EXPECT_TRUE(baseline.at("models").at(0).at("known").get<bool>())
      << baseline.at("models").at(0).dump();
  EXPECT_FALSE(baseline.at("models").at(1).at("known").get<bool>());
  const auto known = ProposalStore(storePath()).knownModels();
  ASSERT_EQ(known.size(), 1u);
  EXPECT_EQ(known[0].model, model);
  EXPECT_EQ(known[0].source, "baseline");
  EXPECT_EQ(reviewer("review baseline --model " + testing::zooPath("no-such-model.pt") +
                     " --profile spyre-2025-clean")
                .status,
            1);

  // A proposal that breaks gpt2 on the 2025 stack while bringing it up on 2026 is refused by
  // the regression run, with no approval before it.
  std::string source = shipped("pow-cube-as-mul");
  source.replace(source.find("return x * x * x"), 16,
                 "return torch.exp(torch.zeros_like(x)) * x * x * x");
  source.replace(source.find(R"(profiles = ["spyre-2025", "spyre-2025-clean"])"), 45,
                 R"(profiles = ["spyre-2025-clean", "spyre-2026-clean"])");
  draft("pow-cube-as-mul", source);
  const int id = submit({"pow-cube-as-mul"}, {{model, "spyre-2026-clean"}});
  const json refused = reviewerJson("review approve " + std::to_string(id));
  ASSERT_TRUE(refused.is_object());
  EXPECT_FALSE(refused.at("approved").get<bool>());
  EXPECT_NE(refused.at("gate")
                .at("problems")
                .dump()
                .find("regression: " + model + " on spyre-2025-clean"),
            std::string::npos)
      << refused.at("gate").at("problems").dump();
}

// A decoder is judged by its decode (issue 30). A main without prescale-mean-of-squares brings
// qwen2-massive-token's forward up on spyre-2026, but its decode drifts from step 1 (the RMS
// norm's variance in fp16), so it is not a model main passes; llama-hd64 decodes its 4 steps
// with main's adapters on both graphs.
TEST_F(ReviewGate, ABaselineJudgesADecoderByItsDecode) {
  const std::string drifting = testing::zooPath("qwen2-massive-token.pt");
  const std::string decoding = testing::zooPath("llama-hd64.pt");
  // The catalog is seeded from a shipped catalog without it (the reviewer's commands inherit it).
  const std::string without = testing::shippedCatalogWithout("prescale-mean-of-squares");
  const testing::ScopedEnvironment catalog_dir("STICKLER_CATALOG_DIR", without);
  draft("pow-cube-as-mul", cubeDraft(1));  // makes the catalog; main is still the seeded one
  const json baseline = reviewerJson("review baseline --model " + decoding + " --model " +
                                     drifting + " --profile spyre-2026");
  ASSERT_TRUE(baseline.is_object());
  ASSERT_EQ(baseline.at("models").size(), 2u);
  const json& passes = baseline["models"][0];
  EXPECT_EQ(passes.value("verdict", ""), "pass") << passes.dump().substr(0, 1500);
  EXPECT_TRUE(passes.value("known", false));
  ASSERT_TRUE(passes.contains("decode")) << passes.dump().substr(0, 1500);
  EXPECT_EQ(passes["decode"]["per_step"].size(), 5u);  // the prefill and 4 steps
  EXPECT_EQ(passes["decode"]["verdict"], "pass");
  bool padded_step = false;
  for (const json& name : passes["decode"]["adapters"]["decode_step"]) {
    padded_step = padded_step || name == "pad-attention-heads";
  }
  EXPECT_TRUE(padded_step) << passes["decode"]["adapters"].dump();

  const json& drifts = baseline["models"][1];
  EXPECT_EQ(drifts.value("forward_verdict", ""), "pass") << drifts.dump().substr(0, 1500);
  EXPECT_EQ(drifts.value("verdict", ""), "fail");
  EXPECT_FALSE(drifts.value("known", true));
  ASSERT_TRUE(drifts.contains("decode"));
  EXPECT_EQ(drifts["decode"]["first_failing_step"], 1);
  EXPECT_EQ(drifts["decode"]["per_step"][0]["verdict"], "pass");  // the prefill
  EXPECT_NE(drifts.value("reason", "").find("decode step 1 of 4 fails"), std::string::npos)
      << drifts.value("reason", "");
  const auto known = ProposalStore(storePath()).knownModels();
  ASSERT_EQ(known.size(), 1u);
  EXPECT_EQ(known[0].model, decoding);

  // The reviewer reads it in a line; judged by its forward alone, the drifting model passes.
  const Command text = reviewer("review baseline --model " + drifting + " --profile spyre-2026");
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("fail at decode step 1 of 4 (the forward passes)"), std::string::npos)
      << text.out;
  const json forward_only =
      reviewerJson("review baseline --model " + drifting + " --profile spyre-2026 --decode 0");
  ASSERT_TRUE(forward_only.is_object());
  EXPECT_EQ(forward_only["models"][0].value("verdict", ""), "pass");
  EXPECT_FALSE(forward_only["models"][0].contains("decode"));
}

TEST_F(ReviewGate, AnApprovalKilledAtAnyPointIsFinishedOrRolledBackAndLosesNothing) {
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  const std::pair<const char*, bool> points[] = {{"gate-stored", false},
                                                 {"commit-written", false},
                                                 {"journaled", false},
                                                 {"main-moved", true}};
  int round = 0;
  for (const auto& [point, lands] : points) {
    SCOPED_TRACE(point);
    draft("pow-cube-as-mul", cubeDraft(++round));
    const int id = submit({"pow-cube-as-mul"}, {{model, "spyre-2025-clean"}});
    const std::string main_before = mainCommit();
    const Command killed = reviewer("review approve " + std::to_string(id),
                                    std::string("STICKLER_TEST_CRASH_AT=") + point);
    EXPECT_EQ(killed.signal, SIGKILL) << killed.status << killed.out << killed.err;

    // The next command in the workspace settles what the killed one left.
    const json status = reviewerJson("review show " + std::to_string(id));
    ASSERT_TRUE(status.is_object());
    expectCatalogWhole();
    if (lands) {
      EXPECT_EQ(status.at("state"), "approved");
      EXPECT_NE(mainCommit(), main_before);
      EXPECT_NE(
          status.at("events").back().at("comment").get<std::string>().find("after an interruption"),
          std::string::npos);
      EXPECT_EQ(shell("git -C stickler-adapters show main:pow-cube-as-mul.py").out,
                cubeDraft(round));
    } else {
      EXPECT_EQ(status.at("state"), "pending");
      EXPECT_EQ(mainCommit(), main_before);
      // Approving again works, and lands.
      const json approved = reviewerJson("review approve " + std::to_string(id));
      ASSERT_TRUE(approved.is_object());
      EXPECT_TRUE(approved.at("approved").get<bool>());
      EXPECT_EQ(mainCommit(), approved.at("commit_on_main"));
    }
    EXPECT_TRUE(ProposalStore(storePath()).approvalsUnderWay().empty());
  }
  expectCatalogWhole();
}

TEST_F(ReviewGate, TheServerKilledDuringAnApprovalFromThePageRestartsWithNothingLost) {
  draft("pow-cube-as-mul", cubeDraft(1));
  const int id =
      submit({"pow-cube-as-mul"}, {{testing::zooPath("gpt2-tiny.pt"), "spyre-2025-clean"}});
  const std::string main_before = mainCommit();
  const std::string path = "/review/" + std::to_string(id);
  for (const std::string point : {"journaled", ""}) {
    SCOPED_TRACE(point.empty() ? "restarted" : point);
    const std::string log = workspace_ + "/serve-" + (point.empty() ? "again" : point) + ".err";
    const std::string env = point.empty() ? "" : "STICKLER_TEST_CRASH_AT=" + point;
    const std::string pid_file = log + ".pid";
    const Command started =
        shell("{ " + env + " " + testing::kSticklerBinary + " review serve --http 127.0.0.1:0 2>'" +
              log + "' & echo $! >'" + pid_file + "'; }");
    ASSERT_EQ(started.status, 0);
    // Whatever happens below, this server does not outlive the test.
    struct Stop {
      std::string pid_file;
      ~Stop() {
        const std::string pid = slurp(pid_file);
        if (!pid.empty()) ::kill(std::stoi(pid), SIGTERM);
      }
    } stop{pid_file};
    int port = 0;
    for (int i = 0; i < 200 && port == 0; ++i) {
      const std::string text = slurp(log);
      const auto at = text.find("http://127.0.0.1:");
      if (at != std::string::npos && text.find("/review", at) != std::string::npos) {
        port = std::stoi(text.substr(at + 17));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ASSERT_NE(port, 0) << slurp(log);
    if (point.empty()) {
      EXPECT_TRUE(ProposalStore(storePath()).approvalsUnderWay().empty());
      EXPECT_EQ(call("review_status", {{"id", id}})
                    .at("structuredContent")
                    .at("events")
                    .back()
                    .at("action"),
                "approval_rolled_back");
    }
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(120, 0);
    const std::string origin = "http://127.0.0.1:" + std::to_string(port);
    const auto approved = client.Post(path + "/approve", {{"Origin", origin}},
                                      "comment=looks+right", "application/x-www-form-urlencoded");
    if (!point.empty()) {
      // The server died in the middle: no answer. Nothing is settled until it starts again.
      EXPECT_FALSE(approved) << approved->status << approved->body;
      EXPECT_EQ(mainCommit(), main_before);
      continue;
    }
    // Started again, the server settled the interrupted approval before serving (rolled back:
    // main had not moved), and approving works.
    ASSERT_TRUE(approved);
    EXPECT_EQ(approved->status, 303) << approved->body;
    const auto page = client.Get(path);
    ASSERT_TRUE(page);
    EXPECT_NE(page->body.find("approval_rolled_back"), std::string::npos);
    EXPECT_NE(page->body.find("class=\"state approved\""), std::string::npos);
    EXPECT_NE(mainCommit(), main_before);
  }
  expectCatalogWhole();
  EXPECT_TRUE(ProposalStore(storePath()).approvalsUnderWay().empty());
}

TEST_F(ReviewGate, TwoReviewersApprovingAtOnceGetOneApprovalAndOneClearConflict) {
  draft("pow-cube-as-mul", cubeDraft(1));
  const int id =
      submit({"pow-cube-as-mul"}, {{testing::zooPath("gpt2-tiny.pt"), "spyre-2025-clean"}});
  const std::string main_before = mainCommit();
  const std::string approve =
      std::string(testing::kSticklerBinary) + " review approve " + std::to_string(id);
  shell("(" + approve + " >a.out 2>a.err; echo $? >a.rc) & (" + approve +
        " >b.out 2>b.err; echo $? >b.rc) & wait");
  const std::string a = slurp(workspace_ + "/a.rc");
  const std::string b = slurp(workspace_ + "/b.rc");
  const std::string errors = slurp(workspace_ + "/a.err") + slurp(workspace_ + "/b.err");
  EXPECT_TRUE((a == "0\n" && b == "2\n") || (a == "2\n" && b == "0\n")) << a << b << errors;
  // Which message depends on when the second read the proposal: during the first's approval, or
  // after it.
  EXPECT_TRUE(errors.find("changed since you read it") != std::string::npos ||
              errors.find("is approved: only a pending proposal can be approved") !=
                  std::string::npos)
      << errors;
  // Main moved once, onto one approval.
  const Command approvals =
      shell("git -C stickler-adapters log --first-parent --format=%s " + main_before + "..main");
  EXPECT_EQ(approvals.out, "Approve proposal " + std::to_string(id) + ": pow-cube-as-mul\n")
      << approvals.out;
  EXPECT_EQ(call("review_status", {{"id", id}}).at("structuredContent").at("state"), "approved");
  expectCatalogWhole();
}

TEST_F(ReviewGate, AnAgentHearsOfEachDecisionThroughItsSubscription) {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<json> notifications;
  session_->setNotifier([&](const json& message) {
    std::lock_guard<std::mutex> lock(mutex);
    notifications.push_back(message);
    arrived.notify_all();
  });
  // Waits for an update of `uri` (the server looks at subscriptions twice a second).
  const auto updated = [&](const std::string& uri) {
    std::unique_lock<std::mutex> lock(mutex);
    return arrived.wait_for(lock, std::chrono::seconds(30), [&] {
      for (const json& message : notifications) {
        if (message.at("method") == "notifications/resources/updated" &&
            message.at("params").at("uri") == uri) {
          return true;
        }
      }
      return false;
    });
  };
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  draft("pow-cube-as-mul", cubeDraft(1));
  const int first = submit({"pow-cube-as-mul"}, {{model, "spyre-2025-clean"}});
  const std::string first_uri = "stickler://reviews/" + std::to_string(first);
  ASSERT_TRUE(request("resources/subscribe", {{"uri", first_uri}}).contains("result"));

  // The reviewer acts in another process; the agent hears of it without asking.
  ASSERT_EQ(reviewer("review request-changes " + std::to_string(first) +
                     " --comment 'say why the cube is exact'")
                .status,
            0);
  ASSERT_TRUE(updated(first_uri));
  const json changed =
      json::parse(read(first_uri).at("result").at("contents").at(0).at("text").get<std::string>());
  EXPECT_EQ(changed.at("state"), "changes_requested");
  EXPECT_EQ(changed.at("events").back().at("comment"), "say why the cube is exact");

  draft("pow-cube-as-mul", cubeDraft(2));
  const json resubmitted = call("submit_for_review", {{"adapters", {"pow-cube-as-mul"}},
                                                      {"models", {model}},
                                                      {"profile", "spyre-2025-clean"},
                                                      {"rationale", "Bring gpt2 up, explained"},
                                                      {"supersedes", first}});
  ASSERT_FALSE(resubmitted.value("isError", false)) << resubmitted.dump().substr(0, 400);
  const int second = resubmitted.at("structuredContent").at("id");
  const std::string second_uri = "stickler://reviews/" + std::to_string(second);
  ASSERT_TRUE(request("resources/subscribe", {{"uri", second_uri}}).contains("result"));
  ASSERT_EQ(reviewer("review approve " + std::to_string(second)).status, 0);
  ASSERT_TRUE(updated(second_uri));
  const json approved =
      json::parse(read(second_uri).at("result").at("contents").at(0).at("text").get<std::string>());
  EXPECT_EQ(approved.at("state"), "approved");
  EXPECT_TRUE(approved.at("gate").at("passed").get<bool>());
  EXPECT_EQ(approved.at("supersedes"), first);

  // Unsubscribed: no more notifications for it; an unknown proposal is not a resource.
  request("resources/unsubscribe", {{"uri", second_uri}});
  EXPECT_TRUE(read("stickler://reviews/999").contains("error"));
  EXPECT_TRUE(read("stickler://reviews/x").contains("error"));
  session_->setNotifier(nullptr);
}

}  // namespace
}  // namespace stickler
