// Reports and repro bundles over MCP: a diagnosis saved by diagnose_model is served by
// get_report and as stickler://reports resources; its repro bundles as stickler://repros;
// nothing outside the workspace is reachable through either.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
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
