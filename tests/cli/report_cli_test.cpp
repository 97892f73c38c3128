// Reports on the command line: diagnose and localize save theirs (JSON, and HTML / JUnit on
// request), `stickler report` serves them back; diagnose's numerics mode and its ranking across
// models (a failure that needs several modules together: localize_causes_test.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/cli/fault_profiles.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::Result;
using testing::stickler;
using testing::wrongScaleProfile;
using testing::zooPath;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "report-cli-" + std::to_string(::getpid()) + "-" + name;
}

TEST(ReportCli, LocalizeSavesItsReportAndWritesHtmlAndJunit) {
  const std::string html = scratch("localize.html");
  const std::string junit = scratch("localize.xml");
  const Result result = stickler({"localize", zooPath("gpt2-tiny.pt"), "--profile",
                                  wrongScaleProfile("transformer.h.0.mlp.c_proj"), "--adapt",
                                  "--html", html, "--junit", junit, "--json"});
  ASSERT_EQ(result.status, 0) << result.err;
  const json report = json::parse(result.out);
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  const std::string id = report["report_id"];
  EXPECT_EQ(report["report_files"]["html"], html);

  const std::string page = readFile(html);
  EXPECT_NE(page.find("<code id=\"culprit-module\">transformer.h.0.mlp.c_proj</code>"),
            std::string::npos);
  EXPECT_NE(page.find("class=\"row culprit-row\" data-module=\"transformer.h.0.mlp.c_proj\""),
            std::string::npos);
  const std::string xml = readFile(junit);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("culprit: transformer.h.0.mlp.c_proj"), std::string::npos) << xml;

  // `stickler report ID` gives the same document back, and its renderings.
  const Result saved = stickler({"report", id, "--json"});
  ASSERT_EQ(saved.status, 0) << saved.err;
  json original = report;
  original.erase("report_id");
  original.erase("report_files");
  EXPECT_EQ(json::parse(saved.out)["report"], original);
  const Result as_html = stickler({"report", id, "--format", "html"});
  ASSERT_EQ(as_html.status, 0) << as_html.err;
  EXPECT_EQ(as_html.out, page);
  const Result listed = stickler({"report", "--format", "list"});
  EXPECT_NE(listed.out.find(id + "  localized"), std::string::npos) << listed.out;
}

TEST(ReportCli, BadReportRequestsAreClearErrors) {
  const Result unknown = stickler({"report", "no-such-report"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("no report 'no-such-report'"), std::string::npos) << unknown.err;
  const Result escape = stickler({"report", "../../etc/passwd"});
  EXPECT_EQ(escape.status, 2);
  const Result format = stickler({"report", "--format", "pdf"});
  EXPECT_EQ(format.status, 2);
  EXPECT_NE(format.err.find("field 'format' must be one of [\"json\",\"html\",\"junit\",\"list\"]"),
            std::string::npos)
      << format.err;
}

TEST(ReportCli, NumericsModeGivesTheOnsetAsAClueWhenTheModelFails) {
  const Result result = stickler({"diagnose", zooPath("llama-tiny.pt"), "--profile",
                                  wrongScaleProfile("model.layers.1.mlp.down_proj"), "--adapt",
                                  "--mode", "numerics", "--json"});
  EXPECT_EQ(result.status, 1) << result.err;  // the model fails end to end
  const json report = json::parse(result.out);
  EXPECT_EQ(report["schema"], "stickler.diagnose");
  EXPECT_EQ(report["mode"], "numerics");
  ASSERT_EQ(report["status"], "fails") << report.dump(2);
  EXPECT_EQ(report["device_runs"], 1);
  ASSERT_FALSE(report["deviations"].empty());
  EXPECT_EQ(report["deviations"][0]["module"], "model.layers.1.mlp.down_proj");
  EXPECT_NE(report["summary"].get<std::string>().find(
                "(Linear), a clue rather than a verdict: localize_divergence (`stickler "
                "localize`) proves which module flips"),
            std::string::npos)
      << report["summary"];
  // Every module call was compared, and the ones before the fault are within threshold.
  const json& modules = report["numerics"]["modules"];
  ASSERT_GT(modules.size(), 10u);
  for (const auto& entry : modules) {
    if (entry["module"] == "model.layers.1.mlp.down_proj") break;
    EXPECT_FALSE(entry["over_threshold"]) << entry.dump();
  }
}

TEST(ReportCli, NumericsModeNamesTheFirstNonFiniteValueEvenAtTheRoot) {
  // BERT builds its additive mask in the forward itself, (1 - mask) * finfo(float32).min: in a
  // 16-bit format the minimum is -inf, and 0 * -inf is NaN, which every module then carries.
  const Result result = stickler({"diagnose", zooPath("bert-tiny.pt"), "--profile",
                                  "spyre-2025-clean", "--mode", "numerics", "--json"});
  EXPECT_EQ(result.status, 1) << result.err;
  const json report = json::parse(result.out);
  ASSERT_TRUE(report.contains("first_non_finite")) << report.dump(2);
  const json& first = report["first_non_finite"];
  EXPECT_EQ(first["module"], "(root)");
  EXPECT_EQ(first["op"], "aten::mul");
  EXPECT_EQ(first["kind"], "NaN");
  EXPECT_NE(first["where"].get<std::string>().find("bert.py:153"), std::string::npos) << first;
  EXPECT_NE(report["summary"].get<std::string>().find("the first NaN"), std::string::npos)
      << report["summary"];

  // With the catalog's adapters (mask-fill-in-device-range) nothing becomes non-finite.
  const Result adapted = stickler({"diagnose", zooPath("bert-tiny.pt"), "--profile",
                                   "spyre-2025-clean", "--adapt", "--mode", "numerics", "--json"});
  EXPECT_FALSE(json::parse(adapted.out).contains("first_non_finite")) << adapted.out;
}

TEST(ReportCli, NumericsModeReportsAnAbsorbedDeviationWhenTheModelPasses) {
  const Result result = stickler({"diagnose", zooPath("bert-tiny.pt"), "--profile",
                                  wrongScaleProfile("encoder.layer.0.attention.output.dense"),
                                  "--adapt", "--mode", "numerics", "--json"});
  EXPECT_EQ(result.status, 0) << result.err;
  const json report = json::parse(result.out);
  ASSERT_EQ(report["status"], "passes") << report.dump(2);
  EXPECT_EQ(report["summary"].get<std::string>().find("localize_divergence"), std::string::npos)
      << "a passing model needs no next step: " << report["summary"];
  ASSERT_EQ(report["absorbed"].size(), 1u);
  EXPECT_EQ(report["absorbed"][0]["module"], "encoder.layer.0.attention.output.dense");
  EXPECT_FALSE(report.contains("deviations"));
}

TEST(ReportCli, DiagnoseRanksBlockersAcrossModelsLikeTheBlockersCommand) {
  const std::vector<std::string> models = {zooPath("gpt2-tiny.pt"), zooPath("llama-tiny.pt"),
                                           zooPath("bert-tiny.pt")};
  std::vector<std::string> diagnose = {"diagnose", "--profile", "spyre-2025-clean", "--json",
                                       "--models"};
  std::vector<std::string> blockers = {"blockers", "--profile", "spyre-2025-clean", "--json"};
  for (const auto& model : models) {
    diagnose.push_back(model);
    blockers.push_back("--model");
    blockers.push_back(model);
  }
  const Result ranked = stickler(diagnose);
  const Result reference = stickler(blockers);
  ASSERT_EQ(ranked.status, 0) << ranked.err;
  ASSERT_EQ(reference.status, 0) << reference.err;
  const json ranking = json::parse(ranked.out);
  EXPECT_EQ(ranking["schema"], "stickler.blocker_ranking");
  EXPECT_EQ(ranking["ranking"], json::parse(reference.out)["ranking"]);
  EXPECT_EQ(ranking["ranking"][0]["op"], "aten::pow");

  const Result both = stickler({"diagnose", zooPath("gpt2-tiny.pt"), "--profile",
                                "spyre-2025-clean", "--models", zooPath("llama-tiny.pt")});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("either model or models"), std::string::npos) << both.err;
}

TEST(ReportCli, AnHtmlPathThatCannotBeWrittenFailsBeforeTheWork) {
  const Result result = stickler({"diagnose", zooPath("gpt2-tiny.pt"), "--profile",
                                  "spyre-2025-clean", "--html", "/nonexistent-dir/x/report.html"});
  EXPECT_EQ(result.status, 2) << result.out;
  EXPECT_NE(result.err.find("report.html"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace stickler
