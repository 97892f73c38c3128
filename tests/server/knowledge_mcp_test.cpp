// The knowledge base through MCP: a gotcha recorded with record_gotcha is found by kb_search in
// the next call and is in the workspace's git history; recording it again merges; pages and
// skills are resources, skills are prompts.
#include <cstdio>

#include "tests/server/workspace_server.h"

namespace stickler {
namespace {

using nlohmann::json;
using KnowledgeMcpTest = WorkspaceServerTest;

std::string gitLog(const std::string& directory) {
  std::string text;
  FILE* pipe = ::popen(("git -C '" + directory + "' log --format=%s 2>&1").c_str(), "r");
  char buffer[512];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) text += buffer;
  if (pipe != nullptr) ::pclose(pipe);
  return text;
}

TEST_F(KnowledgeMcpTest, ARecordedGotchaIsFoundAtOnceCommittedAndMergedWhenRecordedAgain) {
  const json lesson = {
      {"title", "expand must be followed by a materializing op"},
      {"body",
       "On the device, aten::expand is only supported when a materializing operator such as "
       "contiguous or clone follows it; a bare expand fails to compile."},
      {"tags", {"aten::expand", "layout"}},
      {"model", "t5-encoder-tiny"},
      {"evidence", "stickler check t5-encoder-tiny.pt --profile spyre-2026"}};
  const json first = call("record_gotcha", lesson);
  ASSERT_FALSE(first.value("isError", false)) << first.dump(2);
  const std::string id = first["structuredContent"]["gotcha"]["id"];
  EXPECT_FALSE(first["structuredContent"]["merged"]);

  const json found = call(
      "kb_search", {{"query", "bare expand materializing"}, {"limit", 3}})["structuredContent"];
  ASSERT_FALSE(found["results"].empty()) << found.dump(2);
  EXPECT_EQ(found["results"][0]["id"], id);
  EXPECT_EQ(found["results"][0]["kind"], "gotcha");
  EXPECT_EQ(gitLog(workspace_ + "/stickler-gotchas"),
            "Gotcha: expand must be followed by a materializing op\n");
  const json page = read("stickler://gotchas/" + id)["result"]["contents"][0];
  EXPECT_NE(page["text"].get<std::string>().find("a bare expand fails to compile"),
            std::string::npos);

  json again = lesson;
  again["model"] = "t5-encoder-dkv64";
  const json second = call("record_gotcha", again)["structuredContent"];
  EXPECT_TRUE(second["merged"]);
  EXPECT_EQ(second["gotcha"]["id"], id);
  EXPECT_EQ(second["gotcha"]["occurrences"], 2);
  const json listed = call("list_gotchas", json::object())["structuredContent"];
  EXPECT_EQ(listed["gotchas"].size(), 1u);
  EXPECT_NE(gitLog(workspace_ + "/stickler-gotchas").find("Merge a gotcha recorded again"),
            std::string::npos);

  const json bad = call("record_gotcha", {{"title", "no body"}});
  EXPECT_TRUE(bad.value("isError", false));
}

TEST_F(KnowledgeMcpTest, PagesAndSkillsAreResourcesAndSkillsArePrompts) {
  const json page = read("stickler://knowledge/gotcha-vocab-padding")["result"]["contents"][0];
  EXPECT_EQ(page["mimeType"], "text/markdown");
  EXPECT_NE(page["text"].get<std::string>().find("151936"), std::string::npos);
  EXPECT_EQ(read("stickler://knowledge/../../etc/passwd")["error"]["code"], -32002);
  const json skill = read("stickler://skills/localize-divergence")["result"]["contents"][0];
  EXPECT_EQ(skill["text"].get<std::string>().rfind("---\nname: localize-divergence\n", 0), 0u);

  const json prompts = request("prompts/list", json::object())["result"]["prompts"];
  size_t skills = 0;
  for (const auto& prompt : prompts) {
    if (prompt["name"] == "triage-compile-blockers") {
      EXPECT_FALSE(prompt["description"].get<std::string>().empty());
    }
    skills += prompt["name"] != "bring_up_model";
  }
  EXPECT_EQ(skills, 4u);
  const json got = request("prompts/get", {{"name", "triage-compile-blockers"},
                                           {"arguments", {{"task", "gpt2-tiny on spyre-2025"}}}});
  const std::string text = got["result"]["messages"][0]["content"]["text"];
  EXPECT_NE(text.find("diagnose_model"), std::string::npos);
  EXPECT_NE(text.find("Apply this skill to: gpt2-tiny on spyre-2025"), std::string::npos);

  const json read_section =
      call("kb_read", {{"id", "gotcha-rope-head-dim"}, {"section", "models affected"}});
  EXPECT_FALSE(read_section.value("isError", false)) << read_section.dump(2);
  const json unknown = call("kb_read", {{"id", "gotcha-vocab"}});
  EXPECT_TRUE(unknown.value("isError", false));
  EXPECT_NE(unknown["content"][0]["text"].get<std::string>().find("did you mean"),
            std::string::npos);
}

}  // namespace
}  // namespace stickler
