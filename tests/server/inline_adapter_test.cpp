// apply_adapter with an adapter's source inline (issue 32): an agent tries a rewrite without
// drafting it. The probe is parsed, checked and applied as a catalog adapter is, for the
// session only, and leaves nothing behind: no draft, no evidence commit, no file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "adapters/engine/adapter_catalog.h"
#include "tests/server/workspace_server.h"

namespace stickler {
namespace {

using nlohmann::json;
using InlineAdapter = WorkspaceServerTest;

std::string shippedText(const std::string& name) {
  std::ifstream in(shippedCatalogDir() + "/" + name + ".py");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The shipped cube rewrite under a probe's name.
std::string probeSource() {
  std::string text = shippedText("pow-cube-as-mul");
  const std::string field = "name = \"pow-cube-as-mul\"";
  text.replace(text.find(field), field.size(), "name = \"probe-cube\"");
  return text;
}

// Every file of the workspace but its saved reports, with its content: what a probe must not
// change.
std::map<std::string, std::string> filesOf(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string path = std::filesystem::relative(entry.path(), root).string();
    if (path.rfind("stickler-reports", 0) == 0 || !entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    files[path] = content.str();
  }
  return files;
}

// The paths whose content differs between two snapshots, or that only one has.
std::vector<std::string> changed(const std::map<std::string, std::string>& before,
                                 const std::map<std::string, std::string>& after) {
  std::vector<std::string> paths;
  for (const auto& [path, content] : after) {
    const auto was = before.find(path);
    if (was == before.end() || was->second != content) paths.push_back(path);
  }
  for (const auto& [path, content] : before) {
    if (!after.count(path)) paths.push_back(path);
  }
  return paths;
}

bool listed(const json& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_F(InlineAdapter, AProbeIsAppliedForTheSessionOnlyAndLeavesTheCatalogUnchanged) {
  // A workspace catalog with a draft in it, so that there is a catalog to leave alone.
  const json drafted =
      call("draft_adapter", {{"name", "pow-square-as-mul"},
                             {"source", shippedText("pow-square-as-mul") + "\n#\n"},
                             {"reason", "Reword"}});
  ASSERT_FALSE(drafted.value("isError", false)) << drafted.dump().substr(0, 300);
  const auto before = filesOf(workspace_);
  const json catalog_before = call("list_adapters", json::object()).at("structuredContent");

  const std::string model = testing::zooPath("gpt2-tiny.pt");
  const json applied =
      call("apply_adapter",
           {{"model", model}, {"source", probeSource()}, {"profile", "spyre-2025-clean"}});
  ASSERT_FALSE(applied.value("isError", false)) << applied.dump().substr(0, 600);
  const json& report = applied.at("structuredContent");
  EXPECT_EQ(report.at("status"), "applied") << report.dump(1).substr(0, 800);
  EXPECT_TRUE(report.at("inline"));
  EXPECT_FALSE(report.contains("evidence_commit"));
  // Checked as a catalog adapter is: the cube of gelu_new rewritten, equivalence measured.
  EXPECT_GT(report.at("application").at("change").at("rewrites").get<int>(), 0);
  EXPECT_TRUE(report.at("application").contains("equivalence"));
  EXPECT_EQ(report.at("session").at("adapters"), json::array({"probe-cube"}));
  EXPECT_EQ(report.at("session").at("inline"), json::array({"probe-cube"}));

  // The session's model has it; the catalog does not know it, and adapt_model never picks it.
  const json check = call("check_support", {{"model", model}, {"profile", "spyre-2025-clean"}})
                         .at("structuredContent");
  ASSERT_FALSE(check.at("lowering").at("blockers").empty());  // the vocabulary's, not the cube's
  for (const json& blocker : check.at("lowering").at("blockers")) {
    EXPECT_NE(blocker.at("op"), "aten::pow");
  }
  const json catalog_after = call("list_adapters", json::object()).at("structuredContent");
  EXPECT_EQ(catalog_after.at("adapters"), catalog_before.at("adapters"));
  const json reverted = call("revert_adapter", {{"model", model}, {"all", true}});
  ASSERT_FALSE(reverted.value("isError", false)) << reverted.dump().substr(0, 400);
  EXPECT_EQ(changed(before, filesOf(workspace_)), std::vector<std::string>{});

  // adapt_model, on a session that has the probe, builds on it but never takes it from the
  // catalog, and records its evidence for the catalog's adapters only.
  ASSERT_FALSE(call("apply_adapter",
                    {{"model", model}, {"source", probeSource()}, {"profile", "spyre-2025-clean"}})
                   .value("isError", false));
  const json adapted = call("adapt_model", {{"model", model}, {"profile", "spyre-2025-clean"}});
  ASSERT_FALSE(adapted.value("isError", false)) << adapted.dump().substr(0, 600);
  const json& adapters = adapted.at("structuredContent").at("adapters");
  ASSERT_FALSE(adapters.at("applied").empty());  // the vocabulary padding
  for (const json& application : adapters.at("applied")) {
    EXPECT_NE(application.at("adapter"), "probe-cube");
  }
  EXPECT_TRUE(listed(adapters.at("already_applied"), "probe-cube"));
  for (const std::string& path : changed(before, filesOf(workspace_))) {
    EXPECT_EQ(path.find("probe-cube"), std::string::npos) << path;
  }
}

TEST_F(InlineAdapter, WhatCannotBeAProbeIsAToolErrorAndChangesNothing) {
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  const auto before = filesOf(workspace_);
  const std::pair<json, std::string> attempts[] = {
      {{{"model", model}, {"adapter", "pow-cube-as-mul"}, {"source", probeSource()}},
       "give adapter (a catalog adapter's name) or source"},
      {{{"model", model}}, "give adapter (a catalog adapter's name) or source"},
      {{{"model", model}, {"source", shippedText("pow-cube-as-mul")}},
       "'pow-cube-as-mul' is the name of a catalog adapter (shipped)"},
      {{{"model", model}, {"source", "name = \"probe\"\ndef pattern(x):\n  return x +\n"}},
       "inline source:"}};
  for (const auto& [arguments, expected] : attempts) {
    const json result = call("apply_adapter", arguments);
    ASSERT_TRUE(result.value("isError", false)) << arguments.dump();
    const std::string text = result.at("content").at(0).at("text");
    EXPECT_NE(text.find(expected), std::string::npos) << text;
  }
  EXPECT_TRUE(
      call("show_applied", {{"model", model}}).at("structuredContent").at("applied").empty());
  EXPECT_EQ(changed(before, filesOf(workspace_)), std::vector<std::string>{});
}

}  // namespace
}  // namespace stickler
