// The sweep over MCP: run_sweep writes into the workspace and records history that
// coverage_report reads back; every path (the list, the output, the models the list names) is
// confined to the workspace roots.
#include <filesystem>
#include <fstream>

#include "tests/server/workspace_server.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using SweepToolsTest = WorkspaceServerTest;

TEST_F(SweepToolsTest, RunSweepThenCoverageReportInTheWorkspace) {
  std::ofstream(workspace_ + "/models.txt")
      << testing::zooPath("qwen2-hd128.pt") << "\n"
      << testing::zooPath("traps/flipped-features.pt") << "\n";
  const json before = call("coverage_report", json::object());
  EXPECT_TRUE(before.value("isError", false)) << before.dump();

  const json swept = call("run_sweep", {{"models", workspace_ + "/models.txt"},
                                        {"out", workspace_ + "/night"},
                                        {"profile", "spyre-2026"}});
  ASSERT_FALSE(swept.value("isError", false)) << swept.dump();
  const json& document = swept.at("structuredContent");
  EXPECT_EQ(document["schema"], "stickler.sweep");
  EXPECT_EQ(document["summary"]["models"], 2);
  EXPECT_EQ(document["summary"]["passing"], 1);
  EXPECT_TRUE(fs::exists(workspace_ + "/night/report.html"));

  const json coverage = call("coverage_report", {{"category", "layout rule"}});
  ASSERT_FALSE(coverage.value("isError", false)) << coverage.dump();
  EXPECT_EQ(coverage["structuredContent"]["sweep"], document["id"]);
  ASSERT_EQ(coverage["structuredContent"]["models"].size(), 1u);
  EXPECT_EQ(coverage["structuredContent"]["trend"].size(), 1u);
}

TEST_F(SweepToolsTest, PathsOutsideTheRootsAreRefusedBeforeAnyWork) {
  std::ofstream(workspace_ + "/models.txt") << "/etc/hostname\n";
  json result =
      call("run_sweep", {{"models", workspace_ + "/models.txt"}, {"out", workspace_ + "/night"}});
  EXPECT_TRUE(result.value("isError", false)) << result.dump();
  EXPECT_FALSE(fs::exists(workspace_ + "/night"));
  std::ofstream(workspace_ + "/models.txt") << testing::zooPath("qwen2-hd128.pt") << "\n";
  result = call("run_sweep", {{"models", workspace_ + "/models.txt"}, {"out", "/tmp/elsewhere"}});
  EXPECT_TRUE(result.value("isError", false)) << result.dump();
  result = call("run_sweep", {{"models", "/etc/passwd"}, {"out", workspace_ + "/night"}});
  EXPECT_TRUE(result.value("isError", false)) << result.dump();
  result = call("coverage_report", {{"html", "/tmp/outside.html"}});
  EXPECT_TRUE(result.value("isError", false)) << result.dump();
  EXPECT_FALSE(fs::exists(workspace_ + "/night"));
}

}  // namespace
}  // namespace stickler
