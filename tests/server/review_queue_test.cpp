// The review queue as an agent meets it over MCP (issue 16): submit drafts, follow the
// proposal, answer a request for changes by resubmitting; the reviewer's decisions are the
// command line's, never the agent's tools.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/engine/adapter_catalog.h"
#include "simulator/support/errors.h"
#include "tests/server/workspace_server.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/report_store.h"

namespace stickler {
namespace {

using nlohmann::json;
using ReviewQueue = WorkspaceServerTest;

// The command line in this workspace: what a reviewer runs.
using ReviewerContext = RootedContext;

std::string shippedWithAComment(const std::string& name) {
  std::ifstream in(shippedCatalogDir() + "/" + name + ".py");
  std::stringstream text;
  text << in.rdbuf();
  return text.str() + "\n# reworded for the test\n";
}

TEST_F(ReviewQueue, SubmitFollowAndResubmitAfterARequestForChanges) {
  const json drafted = call("draft_adapter", {{"name", "pow-cube-as-mul"},
                                              {"source", shippedWithAComment("pow-cube-as-mul")},
                                              {"reason", "Reword"}});
  ASSERT_FALSE(drafted.value("isError", false)) << drafted.dump().substr(0, 300);
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  const std::string report = ReportStore(workspace_)
                                 .save({{"schema", "stickler.run"},
                                        {"model", {{"name", "gpt2-tiny"}}},
                                        {"verdict", "pass"}});
  const json submit = {{"adapters", {"pow-cube-as-mul"}},
                       {"models", {model}},
                       {"profile", "spyre-2025-clean"},
                       {"rationale", "gelu_new's pow(x, 3) does not lower on spyre-2025"},
                       {"evidence", {report}}};
  const json first = call("submit_for_review", submit);
  ASSERT_FALSE(first.value("isError", false)) << first.dump().substr(0, 400);
  const json& proposal = first.at("structuredContent");
  EXPECT_EQ(proposal.at("state"), "pending");
  EXPECT_EQ(proposal.at("branch"), "proposals/" + std::to_string(proposal.at("id").get<int>()));
  EXPECT_EQ(proposal.at("adapters").at(0).at("draft_tip"),
            drafted.at("structuredContent").at("commit"));
  EXPECT_EQ(proposal.at("claims").at(0).at("profile"), "spyre-2025-clean");
  EXPECT_EQ(proposal.at("evidence"), json::array({report}));
  const int id = proposal.at("id");

  // The agent has no tool to decide: a reviewer does, on the command line.
  const json tools = request("tools/list", json::object()).at("result").at("tools");
  for (const json& tool : tools) {
    EXPECT_NE(tool.at("name"), "review_request_changes");
    EXPECT_NE(tool.at("name"), "review_reject");
  }
  ReviewerContext reviewer(workspace_);
  runOperation(operationNamed("review_request_changes"),
               {{"id", id}, {"comment", "say in the docstring why the cube is exact"}}, reviewer);
  const json status = call("review_status", {{"id", id}}).at("structuredContent");
  EXPECT_EQ(status.at("state"), "changes_requested");
  EXPECT_EQ(status.at("events").back().at("comment"), "say in the docstring why the cube is exact");
  EXPECT_NE(status.at("next").get<std::string>().find("supersedes " + std::to_string(id)),
            std::string::npos);
  // `stickler review show` prints the rationale once, not again as the submission's comment.
  const std::string shown = operationNamed("review_status").render_text(status);
  const std::string rationale = submit.at("rationale");
  ASSERT_NE(shown.find(rationale), std::string::npos) << shown;
  EXPECT_EQ(shown.find(rationale, shown.find(rationale) + 1), std::string::npos) << shown;
  EXPECT_NE(shown.find("say in the docstring why the cube is exact"), std::string::npos) << shown;

  json again = submit;
  again["supersedes"] = id;
  const json second = call("submit_for_review", again);
  ASSERT_FALSE(second.value("isError", false)) << second.dump().substr(0, 400);
  const int second_id = second.at("structuredContent").at("id");
  EXPECT_EQ(second.at("structuredContent").at("supersedes"), id);
  EXPECT_EQ(call("review_status", {{"id", id}}).at("structuredContent").at("state"), "superseded");
  const json pending =
      call("list_reviews", {{"state", "pending"}}).at("structuredContent").at("proposals");
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending.at(0).at("id"), second_id);
  // A decision on what changed since it was read is a conflict, not a second decision.
  EXPECT_THROW(runOperation(operationNamed("review_reject"),
                            {{"id", second_id}, {"comment", "no"}, {"revision", 99}}, reviewer),
               UserError);
  EXPECT_EQ(call("review_status", {{"id", second_id}}).at("structuredContent").at("state"),
            "pending");
}

TEST_F(ReviewQueue, WhatCannotBeProposedIsAToolErrorAndRecordsNothing) {
  call("draft_adapter", {{"name", "pow-cube-as-mul"},
                         {"source", shippedWithAComment("pow-cube-as-mul")},
                         {"reason", "Reword"}});
  const json base = {{"adapters", {"pow-cube-as-mul"}},
                     {"models", {testing::zooPath("gpt2-tiny.pt")}},
                     {"profile", "spyre-2025-clean"},
                     {"rationale", "r"}};
  json no_draft = base;
  no_draft["adapters"] = {"pow-square-as-mul"};  // shipped, never drafted here
  json no_model = base;
  no_model["models"] = {testing::zooPath("no-such-model.pt")};
  json no_report = base;
  no_report["evidence"] = {"no-such-report"};
  json no_profile = base;
  no_profile["profile"] = "spyre-1999";
  json twice = base;
  twice["adapters"] = {"pow-cube-as-mul", "pow-cube-as-mul"};
  const std::pair<json, std::string> attempts[] = {{no_draft, "has no draft"},
                                                   {no_model, "no such archive"},
                                                   {no_report, "no saved report"},
                                                   {no_profile, "spyre-1999"},
                                                   {twice, "named twice"}};
  for (const auto& [input, words] : attempts) {
    const json result = call("submit_for_review", input);
    ASSERT_TRUE(result.value("isError", false)) << input.dump();
    EXPECT_NE(result.dump().find(words), std::string::npos) << result.dump().substr(0, 300);
  }
  EXPECT_TRUE(call("list_reviews", json::object()).at("structuredContent").at("proposals").empty());
}

// A workspace where nothing was drafted has an empty queue: listing it is no error.
TEST(ReviewQueueWithoutCatalog, ListsNothing) {
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) / ("no-catalog-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  RootedContext context(root.string());
  const Operation& list = operationNamed("list_reviews");
  const json listed = runOperation(list, json::object(), context);
  EXPECT_TRUE(listed.at("proposals").empty());
  EXPECT_EQ(list.render_text(listed), "no proposals in the review queue\n");
  EXPECT_FALSE(std::filesystem::exists(root / "stickler-adapters"));  // nothing made
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace stickler
