// Reports and repro bundles over MCP: a diagnosis saved by diagnose_model is served by
// get_report and as stickler://reports resources; its repro bundles as stickler://repros;
// nothing outside the workspace is reachable through either.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "tests/server/workspace_server.h"

namespace stickler {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using ReportResourcesTest = WorkspaceServerTest;

TEST_F(ReportResourcesTest, ADiagnosisIsServedAsReportAndItsReprosAsResources) {
  const json result = call("diagnose_model", {{"model", testing::zooPath("gpt2-tiny.pt")},
                                              {"profile", "spyre-2025-clean"}});
  ASSERT_FALSE(result.value("isError", false)) << result.dump(2);
  const json& report = result.at("structuredContent");
  const std::string id = report.at("report_id");
  EXPECT_EQ(report.at("report_files").at("json"), workspace_ + "/stickler-reports/" + id + ".json");

  // get_report: the same document, and the page for people.
  const json saved = call("get_report", {{"id", id}}).at("structuredContent");
  EXPECT_EQ(saved.at("report").at("blockers").size(), report.at("blockers").size());
  const json latest = call("get_report", {{"format", "html"}}).at("structuredContent");
  EXPECT_EQ(latest.at("id"), id);
  EXPECT_NE(latest.at("text").get<std::string>().find("<section id=\"blockers\">"),
            std::string::npos);

  // The same as resources, in three renderings.
  const json as_json = read("stickler://reports/" + id + ".json").at("result").at("contents")[0];
  EXPECT_EQ(as_json.at("mimeType"), "application/json");
  EXPECT_EQ(json::parse(as_json.at("text").get<std::string>()).at("status"), "blocked");
  const json as_html = read("stickler://reports/" + id + ".html").at("result").at("contents")[0];
  EXPECT_EQ(as_html.at("mimeType"), "text/html");
  const json as_xml = read("stickler://reports/" + id + ".xml").at("result").at("contents")[0];
  EXPECT_NE(as_xml.at("text").get<std::string>().find("failures=\"4\""), std::string::npos)
      << as_xml.dump();  // not compiling, and each of the three blockers

  // A repro bundle: its README as text, its archive as a zip blob.
  const std::string directory = report.at("blockers")[0].at("repro").at("directory");
  const std::string bundle = fs::path(directory).filename().string();
  const std::string base = "stickler://repros/gpt2-tiny/" + bundle + "/";
  const json readme = read(base + "README.md").at("result").at("contents")[0];
  EXPECT_NE(readme.at("text").get<std::string>().find("stickler run"), std::string::npos);
  const json archive = read(base + "repro.pt").at("result").at("contents")[0];
  EXPECT_EQ(archive.at("mimeType"), "application/zip");
  EXPECT_EQ(archive.at("blob").get<std::string>().substr(0, 4), "UEsD");  // "PK\3\4"

  // Completion offers the saved reports.
  const json completion =
      request("completion/complete",
              {{"ref", {{"type", "ref/resource"}, {"uri", "stickler://reports/{report}"}}},
               {"argument", {{"name", "report"}, {"value", id.substr(0, 9)}}}});
  EXPECT_EQ(completion.at("result").at("completion").at("values").size(), 3u) << completion.dump();
}

// An agent's path through a numerical failure: localize_divergence names the softmax, writes
// its reproducer in the workspace, the agent reads the bundle's README as a resource, and
// run_model on the archive fails on the lab build and passes on the clean profile beside it.
TEST_F(ReportResourcesTest, ALocalizationsReproducerIsServedAndRunsAsItSays) {
  const std::string profile = workspace_ + "/lab-build.json";
  std::ofstream(profile) << json{
      {"version", 1},
      {"extends", "spyre-2025-clean"},
      {"name", "lab-build"},
      {"description", "A lab build whose first attention's softmax comes out 3 times too large."},
      {"faults",
       {{{"id", "softmax-scale"},
         {"match", {{"op", "aten::softmax"}, {"module", "transformer.h.0.attn"}}},
         {"effect",
          {{"kind", "wrong_scale"},
           {"factor", 3.0}}}}}}}.dump();
  const json result =
      call("localize_divergence",
           {{"model", testing::zooPath("gpt2-tiny.pt")}, {"profile", profile}, {"adapt", true}});
  ASSERT_FALSE(result.value("isError", false)) << result.dump(2).substr(0, 800);
  const json& report = result.at("structuredContent");
  EXPECT_EQ(report.at("culprit_operators").at("operators")[0].at("op"), "aten::softmax");
  const json& repro = report.at("repro");
  ASSERT_TRUE(repro.value("reproduces", false)) << repro.dump(2);
  const std::string archive = repro.at("archive");
  EXPECT_EQ(archive.rfind(workspace_ + "/stickler-repros/gpt2-tiny/", 0), 0u) << archive;

  const std::string bundle = fs::path(repro.at("directory").get<std::string>()).filename();
  const json readme =
      read("stickler://repros/gpt2-tiny/" + bundle + "/README.md").at("result").at("contents")[0];
  const std::string text = readme.at("text");
  EXPECT_NE(text.find("passes on the same profile without its fault rules"), std::string::npos)
      << text;
  EXPECT_NE(text.find(repro.at("command").get<std::string>()), std::string::npos) << text;

  const json faulty = call("run_model", {{"model", archive}, {"backend", "spyre-sim:" + profile}});
  EXPECT_EQ(faulty.at("structuredContent").at("verdict"), "fail") << faulty.dump().substr(0, 600);
  const std::string clean = repro.at("numerics").at("clean_profile");
  const json passed = call("run_model", {{"model", archive}, {"backend", "spyre-sim:" + clean}});
  EXPECT_EQ(passed.at("structuredContent").at("verdict"), "pass") << passed.dump().substr(0, 600);
}

TEST_F(ReportResourcesTest, NothingOutsideTheWorkspaceIsReachable) {
  EXPECT_EQ(read("stickler://reports/../../etc/passwd.json").at("error").at("code"), -32002);
  EXPECT_EQ(read("stickler://reports/nothing.json").at("error").at("code"), -32002);
  EXPECT_EQ(read("stickler://reports/nothing.pdf").at("error").at("code"), -32002);
  EXPECT_EQ(read("stickler://repros/../../etc/passwd").at("error").at("code"), -32002);
  EXPECT_EQ(read("stickler://repros/a/b/secret.txt").at("error").at("code"), -32002);
  // A symlink planted inside stickler-repros that leads out of the workspace.
  fs::create_directories(workspace_ + "/stickler-repros/m/b");
  fs::create_symlink("/etc/hostname", workspace_ + "/stickler-repros/m/b/README.md");
  EXPECT_EQ(read("stickler://repros/m/b/README.md").at("error").at("code"), -32002);

  const json outside = call("diagnose_model", {{"model", testing::zooPath("gpt2-tiny.pt")},
                                               {"profile", "spyre-2025-clean"},
                                               {"html", "/tmp/outside-the-workspace.html"}});
  EXPECT_TRUE(outside.value("isError", false)) << outside.dump();
  EXPECT_FALSE(fs::exists(workspace_ + "/stickler-reports"));  // refused before any work
  const json missing = call("get_report", {{"id", "nothing"}});
  EXPECT_TRUE(missing.value("isError", false));
}

}  // namespace
}  // namespace stickler
