// Hostile input through the MCP tools (issue 15): each attack ends in a clear tool error, the
// server still answers, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/server/workspace_server.h"

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

}  // namespace
}  // namespace stickler
