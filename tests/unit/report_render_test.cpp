// The HTML page and the JUnit XML a report renders to: what they show, and that nothing in a
// report (a module path, a message) can break out of its markup; and the escaper and skeleton
// every HTML page is built on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tools/reports/html_page.h"
#include "tools/reports/html_report.h"
#include "tools/reports/junit_report.h"
#include "tools/reports/report_outcome.h"

namespace stickler {
namespace {

using nlohmann::json;

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

json moduleEntry(const std::string& module, double rel_l2, double threshold) {
  return {{"module", module},         {"module_class", "Linear"},
          {"rel_l2", rel_l2},         {"threshold", threshold},
          {"ratio_to_emulated", 1.0}, {"over_threshold", rel_l2 > threshold}};
}

// A localization report shaped as localize writes it, with a hostile module name in it.
json localizeReport() {
  json report = {
      {"schema", "stickler.localize"},
      {"version", 1},
      {"model", {{"name", "toy"}, {"path", "toy.pt"}, {"sha256", "0123456789abcdef0123"}}},
      {"backend", "spyre-sim:test"},
      {"status", "localized"},
      {"summary", "layers.1.mlp flips the end-to-end verdict"},
      {"units", 3},
      {"device_runs", 6},
      {"device_run_target", 6},
      {"determinism", {{"runs", 2}, {"deterministic", true}}},
      {"culprit",
       {{"module", "layers.1.mlp"},
        {"module_class", "MLP"},
        {"position", 2},
        {"deviation", {{"rel_l2", 2.0}, {"threshold", 0.01}, {"ratio_to_emulated", 600.0}}}}},
      {"confirmation",
       {{"alone_on_device", "fail"}, {"everything_else_on_device", "pass"}, {"confirmed", true}}},
      {"absorbed", json::array({{{"module", "layers.0.<script>alert(1)</script>"},
                                 {"module_class", "Attn"},
                                 {"rel_l2", 0.5},
                                 {"threshold", 0.01},
                                 {"ratio_to_emulated", 150.0},
                                 {"downstream_over_threshold", 0}}})},
      {"runs", json::array({{{"device", "whole model"}, {"verdict", "fail"}}})}};
  report["numerics"] = {
      {"thresholds", {{"margin", 4.0}, {"percentile", 0.99}, {"input_sets", 3}}},
      {"modules",
       json::array({moduleEntry("layers.0.<script>alert(1)</script>", 0.5, 0.01),
                    moduleEntry("layers.1.mlp", 2.0, 0.01), moduleEntry("", 0.001, 0.01)})}};
  report["numerics"]["modules"][2]["rel_l2"] = nullptr;  // non-finite
  return report;
}

TEST(HtmlReport, ShowsTheCulpritTheChartAndTheAbsorbedDeviation) {
  const std::string page = renderHtmlReport(localizeReport());
  EXPECT_NE(page.find("<code id=\"culprit-module\">layers.1.mlp</code>"), std::string::npos);
  EXPECT_NE(page.find("<svg id=\"module-chart\""), std::string::npos);
  EXPECT_EQ(occurrences(page, "<g class=\"row "), 3u);  // one row per module call
  EXPECT_EQ(occurrences(page, "class=\"row culprit-row\""), 1u);
  EXPECT_EQ(occurrences(page, "class=\"row absorbed-row\""), 1u);
  EXPECT_NE(page.find("data-module=\"&lt;root&gt;\""), std::string::npos);
  EXPECT_NE(page.find("non-finite / 0.01"), std::string::npos);
  EXPECT_NE(page.find("<section id=\"absorbed\">"), std::string::npos);
  EXPECT_NE(page.find("confirmed"), std::string::npos);
}

// The culprit's callout says why the numerics' onset is not the culprit, and gives the
// reproducer with its clean control.
TEST(HtmlReport, TheCulpritCalloutExplainsTheOnsetAndGivesTheReproducer) {
  json report = localizeReport();
  report["numerics_onset"] = {{"module", "layers.1.mlp.down"},
                              {"relation", "fed_by_culprit"},
                              {"explanation",
                               "onset in layers.1.mlp.down, fed by the culprit layers.1.mlp; "
                               "layers.1.mlp.down alone on the device passes"}};
  report["repro"] = {
      {"command", "stickler run r/repro.pt --backend spyre-sim:f.json"},
      {"reproduces", true},
      {"scope", "module layers.1.mlp"},
      {"numerics",
       {{"clean_command", "stickler run r/repro.pt --backend spyre-sim:r/clean-profile.json"},
        {"clean_observed", "pass: output relative L2 0.001 (tolerance 0.004)"}}}};
  const std::string page = renderHtmlReport(report);
  const size_t callout = page.find("<section id=\"culprit\"");
  ASSERT_NE(callout, std::string::npos);
  const std::string section = page.substr(callout, page.find("</section>", callout) - callout);
  EXPECT_NE(section.find("<p id=\"numerics-onset\">Numerics: onset in layers.1.mlp.down, fed "
                         "by the culprit layers.1.mlp; layers.1.mlp.down alone on the device "
                         "passes.</p>"),
            std::string::npos)
      << section;
  EXPECT_NE(
      section.find("Repro (module layers.1.mlp, checked to fail the same way): <code "
                   "class=\"repro\">stickler run r/repro.pt --backend spyre-sim:f.json</code>"),
      std::string::npos)
      << section;
  EXPECT_NE(section.find("spyre-sim:r/clean-profile.json</code>"), std::string::npos) << section;
}

TEST(HtmlReport, NothingInTheReportBreaksOutOfTheMarkup) {
  const std::string page = renderHtmlReport(localizeReport());
  // The only <script> is the JSON document's; the module name appears escaped.
  EXPECT_EQ(occurrences(page, "<script"), 1u);
  EXPECT_NE(page.find("layers.0.&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(occurrences(page, "</script>"), 1u);
  // Self-contained: nothing loaded from anywhere.
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  // The embedded document is the report itself.
  const size_t start = page.find("id=\"report-json\">") + 17;
  const std::string embedded = page.substr(start, page.find("</script>", start) - start);
  EXPECT_EQ(json::parse(embedded), localizeReport());
}

TEST(HtmlReport, ACompileDiagnosisListsBlockersWithTheirRepros) {
  const json report = {
      {"schema", "stickler.diagnose"},
      {"mode", "compile"},
      {"model", {{"name", "toy"}}},
      {"profile", "spyre-2025"},
      {"status", "blocked"},
      {"repro_bundles", 1},
      {"blockers",
       json::array({{{"rule", "unsupported-op"},
                     {"op", "aten::pow"},
                     {"module", "mlp.act"},
                     {"module_class", "GELU"},
                     {"message", "pow is not in the operator table"},
                     {"adapters", {"pow-cube-as-mul"}},
                     {"repro",
                      {{"command", "stickler run r/repro.pt --backend spyre-sim:spyre-2025"},
                       {"reproduces", true}}}}})}};
  const std::string page = renderHtmlReport(report);
  EXPECT_NE(page.find("<section id=\"blockers\">"), std::string::npos);
  EXPECT_NE(page.find("stickler run r/repro.pt --backend spyre-sim:spyre-2025</code> (checked)"),
            std::string::npos);
  EXPECT_NE(page.find("<code>pow-cube-as-mul</code>"), std::string::npos);
  EXPECT_EQ(page.find("id=\"culprit\""), std::string::npos);  // no culprit to show
  EXPECT_EQ(reportOutcome(report).passed, false);
  EXPECT_EQ(reportOutcome(report).summary,
            "1 blocker(s), 1 of them cleared by a catalog adapter; 1 repro bundle(s) written");
}

// A run diagnosis says in words what the model did, for every verdict a run can reach.
TEST(ReportOutcome, ARunSummarySaysWhatTheModelDid) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"pass", "the model passes end to end on spyre-2026"},
      {"fail", "the model fails end to end on spyre-2026"},
      {"aborted", "the model aborts end to end on spyre-2026"},
      {"timed_out", "the model times out end to end on spyre-2026"},
      {"failed", "the model fails to run end to end on spyre-2026"},
      {"blocked", "the model does not compile for spyre-2026"},
  };
  for (const auto& [verdict, summary] : expected) {  // never "aborteds" or "passs"
    json report = {{"schema", "stickler.diagnose"},
                   {"mode", "run"},
                   {"profile", "spyre-2026"},
                   {"verdict", verdict}};
    if (verdict == "aborted" || verdict == "timed_out" || verdict == "failed") {
      report["run"] = {{"status", verdict}};
    }
    const ReportOutcome outcome = reportOutcome(report);
    EXPECT_EQ(outcome.summary, summary) << verdict;
    EXPECT_EQ(outcome.passed, verdict == "pass") << verdict;
  }
}

TEST(HtmlReport, ACompilerFailureShowsWhereAndItsRepro) {
  const json report = {{"schema", "stickler.diagnose"},
                       {"mode", "compile"},
                       {"model", {{"name", "toy"}}},
                       {"profile", "p"},
                       {"status", "compiler_error"},
                       {"blockers", json::array()},
                       {"compiler_failure",
                        {{"op", "aten::layer_norm"},
                         {"module", "enc.layer.1.ln"},
                         {"module_class", "LayerNorm"},
                         {"message", "internal compiler error"},
                         {"repro",
                          {{"command", "stickler run r/repro.pt --backend spyre-sim:p"},
                           {"reproduces", true},
                           {"scope", "module enc.layer.1"}}}}}};
  const std::string page = renderHtmlReport(report);
  EXPECT_NE(page.find("<section id=\"compiler-failure\""), std::string::npos);
  EXPECT_NE(page.find("Repro (module enc.layer.1, checked to fail the same way): <code "
                      "class=\"repro\">stickler run r/repro.pt --backend spyre-sim:p</code>"),
            std::string::npos);
  const std::string xml = renderJunitReport(report);
  EXPECT_NE(xml.find("<failure type=\"compiler_error\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("repro: stickler run r/repro.pt --backend spyre-sim:p"), std::string::npos);
}

TEST(JunitReport, AFailingLocalizationIsOneFailedCaseNamingTheCulprit) {
  const std::string xml = renderJunitReport(localizeReport());
  EXPECT_NE(xml.find("<testsuites name=\"stickler\" tests=\"1\" failures=\"1\">"),
            std::string::npos);
  EXPECT_NE(xml.find("name=\"end to end on spyre-sim:test\""), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"localized\" message=\"layers.1.mlp flips the end-to-end "
                     "verdict\">culprit: layers.1.mlp (MLP)"),
            std::string::npos);
}

TEST(JunitReport, PassingReportsHaveNoFailuresAndAttributesAreEscaped) {
  json report = localizeReport();
  report["status"] = "passes";
  report["summary"] = "the model \"passes\" & <that> is all";
  report.erase("culprit");
  const std::string xml = renderJunitReport(report);
  EXPECT_NE(xml.find("failures=\"0\""), std::string::npos);
  EXPECT_EQ(xml.find("<failure"), std::string::npos);

  report["status"] = "fails";
  const std::string failed = renderJunitReport(report);
  EXPECT_NE(failed.find("message=\"the model &quot;passes&quot; &amp; &lt;that&gt; is all\""),
            std::string::npos);
}

TEST(JunitReport, ARankingIsOneCasePerModel) {
  const json ranking = {
      {"schema", "stickler.blocker_ranking"},
      {"profile", "spyre-2025"},
      {"models", json::array({{{"model", "a"}, {"compiles", true}, {"blockers", 0}},
                              {{"model", "b"}, {"compiles", false}, {"blockers", 4}}})},
      {"ranking", json::array()}};
  const std::string xml = renderJunitReport(ranking);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("name=\"compiles: b on spyre-2025\">\n      <failure type=\"blocked\" "
                     "message=\"4 blocker(s)\""),
            std::string::npos);
  EXPECT_EQ(reportOutcome(ranking).status, "1 of 2 blocked");
}

TEST(HtmlPage, EscapesEveryCharacterThatCanEndTextOrAnAttribute) {
  EXPECT_EQ(escapeMarkup("&"), "&amp;");
  EXPECT_EQ(escapeMarkup("<"), "&lt;");
  EXPECT_EQ(escapeMarkup(">"), "&gt;");
  EXPECT_EQ(escapeMarkup("\""), "&quot;");
  EXPECT_EQ(escapeMarkup("'"), "&#39;");
  // An escaped reference is escaped again, not passed through as one.
  EXPECT_EQ(escapeMarkup("&amp;"), "&amp;amp;");
  EXPECT_EQ(escapeMarkup("a<b c=\"d\" e='f'>&"), "a&lt;b c=&quot;d&quot; e=&#39;f&#39;&gt;&amp;");
  // Control characters XML forbids become spaces; tab and newlines stay.
  EXPECT_EQ(escapeMarkup(std::string{'a', '\x01', 'b', '\x1f', '\t', 'c', '\r', '\n'}),
            "a b \tc\r\n");
  // Bytes of UTF-8 pass through untouched.
  EXPECT_EQ(escapeMarkup("layers.0 \xc3\xa9 \xe2\x80\xa6"), "layers.0 \xc3\xa9 \xe2\x80\xa6");
}

TEST(HtmlPage, TheSkeletonEscapesTheTitleAndInlinesTheStyleAndBody) {
  const std::string page = renderHtmlPage({.title = "a </title><script>x</script> & 'b'",
                                           .style = ".mine{color:#123456}",
                                           .body = "<p id=\"mine\">body</p>"});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0), 0u) << page;
  EXPECT_NE(page.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(page.find("<title>a &lt;/title&gt;&lt;script&gt;x&lt;/script&gt; &amp; &#39;b&#39;"
                      "</title>"),
            std::string::npos)
      << page;
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_NE(page.find("<style>.mine{color:#123456}</style>"), std::string::npos);
  EXPECT_NE(page.find("<body>\n<p id=\"mine\">body</p></body>\n</html>\n"), std::string::npos);
  // Self-contained: the policy forbids loading anything, and the page loads nothing.
  EXPECT_NE(page.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                      "'none'; style-src 'unsafe-inline'\">"),
            std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);
  // The charset comes before anything with text in it, so the browser reads the title as UTF-8.
  EXPECT_LT(page.find("<meta charset="), page.find("<title>"));
}

TEST(HtmlPage, AReportWearsTheDocumentStyleThenItsOwn) {
  const std::string page = renderHtmlReport(localizeReport());
  EXPECT_NE(page.find(kDocumentStyle), std::string::npos);
  EXPECT_NE(page.find(".status.passed"), std::string::npos);
  EXPECT_LT(page.find(kDocumentStyle), page.find(".status.passed"));
}

}  // namespace
}  // namespace stickler
