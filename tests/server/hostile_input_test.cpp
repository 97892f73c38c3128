// Hostile input through the MCP tools (issue 15): each attack ends in a clear tool error, the
// server still answers, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/workspace_server.h"
#include "tools/reports/report_store.h"

namespace stickler {
namespace {

using nlohmann::json;
using HostileInput = WorkspaceServerTest;

std::string rewriteReturning(const std::string& expression) {
  return "name = \"deep\"\n"
         "gap = \"a test\"\n"
         "why = \"a test\"\n"
         "models = [\"*\"]\n"
         "profiles = [\"spyre-2025\"]\n"
         "\n"
         "\n"
         "def pattern(x):\n"
         "    return x * x\n"
         "\n"
         "\n"
         "def replacement(x):\n"
         "    return " +
         expression + "\n";
}

TEST_F(HostileInput, DeeplyNestedAdapterSourceIsAToolErrorAndNothingIsDrafted) {
  // 20,000 nested parentheses and a 50,000-term sum killed the server; depth 5,000 was committed.
  std::string sum = "x";
  for (int i = 0; i < 5000; ++i) sum += " + x";
  const std::string attacks[] = {
      rewriteReturning(std::string(20000, '(') + "x" + std::string(20000, ')')),
      rewriteReturning(std::string(5000, '(') + "x" + std::string(5000, ')')),
      rewriteReturning(sum), rewriteReturning(sum + std::string(50000, '+'))};
  for (const std::string& source : attacks) {
    const json result =
        call("draft_adapter", {{"name", "deep"}, {"source", source}, {"reason", "r"}});
    ASSERT_TRUE(result.value("isError", false)) << result.dump().substr(0, 300);
    const std::string message = result.at("content").at(0).at("text");
    EXPECT_TRUE(message.find("nested more than 100 levels deep") != std::string::npos ||
                message.find("an adapter file is at most 65536") != std::string::npos)
        << message.substr(0, 300);
  }
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/stickler-adapters"));
  EXPECT_EQ(request("ping", json::object()).at("result"), json::object());
}

// A file outside the workspace, with a secret in it, removed at the end.
class OutsideFile {
 public:
  explicit OutsideFile(const std::string& name)
      : path_(::testing::TempDir() + name + "-" + std::to_string(::getpid())) {
    std::ofstream(path_) << "root:x:0:0:the-secret-line\n";
  }
  ~OutsideFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_F(HostileInput, AReportLinkedOutsideTheWorkspaceIsNeverRead) {
  const ReportStore store(workspace_);
  const std::string saved =
      store.save({{"schema", "stickler.run"}, {"model", {{"name", "m"}}}, {"verdict", "pass"}});
  const OutsideFile secret("passwd-like");
  std::filesystem::create_symlink(secret.path(), workspace_ + "/stickler-reports/leak.json");
  std::ofstream(workspace_ + "/stickler-reports/junk.json") << "not json at all";

  const json direct = call("get_report", {{"id", "leak"}});
  EXPECT_TRUE(direct.value("isError", false));
  EXPECT_EQ(direct.dump().find("the-secret-line"), std::string::npos) << direct.dump();
  const json resource = read("stickler://reports/leak.json");
  ASSERT_TRUE(resource.contains("error")) << resource.dump().substr(0, 300);
  EXPECT_EQ(resource.dump().find("the-secret-line"), std::string::npos) << resource.dump();

  // The list leaves the link out, names the unreadable file, and still lists the real report.
  const json list = call("get_report", {{"format", "list"}});
  ASSERT_FALSE(list.value("isError", false)) << list.dump().substr(0, 300);
  const json& reports = list.at("structuredContent").at("reports");
  ASSERT_EQ(reports.size(), 2u) << reports.dump();
  bool junk_named = false, saved_listed = false;
  for (const json& entry : reports) {
    EXPECT_NE(entry.at("id"), "leak");
    junk_named = junk_named || (entry.at("id") == "junk" && entry.contains("error"));
    saved_listed = saved_listed || (entry.at("id") == saved && entry.at("status").is_string());
  }
  EXPECT_TRUE(junk_named) << reports.dump();
  EXPECT_TRUE(saved_listed) << reports.dump();
  EXPECT_EQ(request("ping", json::object()).at("result"), json::object());
}

TEST_F(HostileInput, AdapterCodeThatReachesFilesIsRefusedWhenDrafted) {
  // The attack of the issue: a replacement mapped a file outside the workspace with
  // torch.from_file and wrote into it with fill_ during apply_adapter.
  const OutsideFile victim("victim");
  const std::string source =
      "name = \"reach\"\ngap = \"a test\"\nwhy = \"a test\"\n"
      "models = [\"*\"]\nprofiles = [\"spyre-2025\"]\nremove_when = \"r\"\n\n\n"
      "def pattern(x):\n    return x * x\n\n\n"
      "def replacement(x):\n"
      "    y = torch.from_file(\"" +
      victim.path() +
      "\", True, 16)\n"
      "    y.fill_(0.0)\n"
      "    return x * x + y.sum() * 0.0\n";
  const json result =
      call("draft_adapter", {{"name", "reach"}, {"source", source}, {"reason", "r"}});
  ASSERT_TRUE(result.value("isError", false)) << result.dump().substr(0, 300);
  const std::string message = result.at("content").at(0).at("text");
  EXPECT_TRUE(std::regex_search(message, std::regex(":14:9: aten::from_file is not allowed")))
      << message;
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/stickler-adapters"));
  std::ifstream in(victim.path());
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "root:x:0:0:the-secret-line\n");
  EXPECT_EQ(request("ping", json::object()).at("result"), json::object());
}

TEST_F(HostileInput, AForwardThatNeverEndsIsAToolErrorAfterTheTimeout) {
  // The example run at load happens in the server's process, where timeout_seconds did not
  // apply: run_model never returned.
  const json result =
      call("run_model",
           {{"model", testing::zooPath("broken/forward-never-ends.pt")}, {"timeout_seconds", 1}});
  ASSERT_TRUE(result.value("isError", false)) << result.dump().substr(0, 300);
  const std::string message = result.at("content").at(0).at("text");
  EXPECT_NE(message.find("more than 1 s and was stopped"), std::string::npos) << message;
  EXPECT_EQ(request("ping", json::object()).at("result"), json::object());
}

TEST_F(HostileInput, FourAgentsDraftingAtOnceInAFreshWorkspaceAllSucceed) {
  // Some got "config.lock", "not a Stickler adapter catalog" or template errors while the
  // catalog was being created.
  std::vector<json> results(4);
  std::vector<std::thread> agents;
  for (int i = 0; i < 4; ++i) {
    agents.emplace_back([&, i] {
      const std::string name = "agent-" + std::to_string(i);
      std::string source = rewriteReturning("x * x");
      source.replace(source.find("\"deep\""), 6, "\"" + name + "\"");
      source.insert(source.find("\n\n\ndef pattern"), "\nremove_when = \"r\"");
      results[i] = request("tools/call",
                           {{"name", "draft_adapter"},
                            {"arguments", {{"name", name}, {"source", source}, {"reason", "r"}}}})
                       .at("result");
    });
  }
  for (auto& agent : agents) agent.join();
  for (const json& result : results) {
    EXPECT_FALSE(result.value("isError", false)) << result.dump().substr(0, 400);
  }
  const json listed = call("list_adapters", json::object());
  int drafts = 0;
  for (const json& adapter : listed.at("structuredContent").at("adapters")) {
    drafts += adapter.at("name").get<std::string>().rfind("agent-", 0) == 0;
  }
  EXPECT_EQ(drafts, 4) << listed.dump().substr(0, 400);
  EXPECT_EQ(request("ping", json::object()).at("result"), json::object());
}

TEST_F(HostileInput, AReportDirectoryLinkedOutsideTheWorkspaceIsRefused) {
  const std::string outside =
      ::testing::TempDir() + "outside-reports-" + std::to_string(::getpid());
  std::filesystem::create_directories(outside);
  std::ofstream(outside + "/x.json")
      << R"({"schema": "stickler.run", "secret": "the-secret-line"})";
  std::filesystem::create_symlink(outside, workspace_ + "/stickler-reports");
  const json result = call("get_report", {{"id", "x"}});
  EXPECT_TRUE(result.value("isError", false));
  EXPECT_NE(result.dump().find("leads out of the workspace"), std::string::npos) << result.dump();
  EXPECT_EQ(result.dump().find("the-secret-line"), std::string::npos);
  std::filesystem::remove_all(outside);
}

}  // namespace
}  // namespace stickler
