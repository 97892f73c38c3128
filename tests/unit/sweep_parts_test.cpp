// The sweep's parts that need no model: shards from flags and schedulers, model lists, the
// summary and diff, the history store, and the retention policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "simulator/support/errors.h"
#include "tools/reports/report_retention.h"
#include "tools/sweep/sweep_history.h"
#include "tools/sweep/sweep_models.h"
#include "tools/sweep/sweep_page.h"
#include "tools/sweep/sweep_presentation.h"
#include "tools/sweep/sweep_summary.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string freshDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/sweep_parts_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::function<const char*(const char*)> environment(std::map<std::string, std::string> values) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(values));
  return [held](const char* name) -> const char* {
    const auto found = held->find(name);
    return found == held->end() ? nullptr : found->second.c_str();
  };
}

TEST(SweepShards, FlagsAndSchedulersGiveTheSameShards) {
  const Shard flag = parseShard("2/5");
  EXPECT_EQ(flag.index, 2u);
  EXPECT_EQ(flag.count, 5u);
  EXPECT_THROW(parseShard("5/5"), UserError);
  EXPECT_THROW(parseShard("1/0"), UserError);
  EXPECT_THROW(parseShard("-1/3"), UserError);
  EXPECT_THROW(parseShard("a/3"), UserError);
  EXPECT_THROW(parseShard("3"), UserError);

  const Shard slurm = shardFromEnvironment(environment({{"SLURM_ARRAY_TASK_ID", "7"},
                                                        {"SLURM_ARRAY_TASK_MIN", "5"},
                                                        {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_EQ(slurm.index, 2u);
  EXPECT_EQ(slurm.count, 4u);
  EXPECT_EQ(slurm.source, "slurm");
  const Shard kubernetes = shardFromEnvironment(
      environment({{"JOB_COMPLETION_INDEX", "3"}, {"STICKLER_SHARD_COUNT", "4"}}));
  EXPECT_EQ(kubernetes.index, 3u);
  EXPECT_EQ(kubernetes.source, "kubernetes");
  EXPECT_TRUE(shardFromEnvironment(environment({})).whole());
  EXPECT_THROW(shardFromEnvironment(environment({{"JOB_COMPLETION_INDEX", "0"}})), UserError);
  EXPECT_THROW(shardFromEnvironment(
                   environment({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})),
               UserError);

  // Every model in exactly one shard, and the shards about equal.
  std::vector<std::string> models;
  for (int i = 0; i < 10; ++i) models.push_back("m" + std::to_string(i));
  std::map<std::string, int> seen;
  for (size_t k = 0; k < 3; ++k) {
    const auto taken = shardModels(models, {k, 3, "flag"});
    EXPECT_GE(taken.size(), 3u);
    EXPECT_LE(taken.size(), 4u);
    for (const auto& model : taken) ++seen[model];
  }
  EXPECT_EQ(seen.size(), 10u);
  for (const auto& [model, count] : seen) EXPECT_EQ(count, 1) << model;
}

TEST(SweepModelList, PathsGlobsCommentsAndManifests) {
  const std::string dir = freshDir("lists");
  fs::create_directories(dir + "/zoo/sub");
  for (const char* name : {"zoo/a.pt", "zoo/b.pt", "zoo/sub/c.pt"})
    std::ofstream(dir + "/" + name) << "x";
  std::ofstream(dir + "/list.txt")
      << "# nightly\n\nzoo/*.pt   # the top level\n  zoo/sub/c.pt\nzoo/a.pt\nmissing.pt\n";
  const auto identity = [](const std::string& path) { return path; };
  const auto models = readModelList(dir + "/list.txt", identity);
  ASSERT_EQ(models.size(), 4u);  // a.pt once; missing.pt stays, to be reported as a bad archive
  std::vector<std::string> names;
  for (const std::string& model : models) {
    EXPECT_TRUE(fs::path(model).is_absolute()) << model;
    names.push_back(fs::path(model).filename());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"missing.pt", "a.pt", "b.pt", "c.pt"}));

  std::ofstream(dir + "/index.json")
      << R"({"version": 1, "models": [{"name": "b", "file": "zoo/b.pt"}, {"file": "zoo/sub/c.pt"}]})";
  const auto manifest = readModelList(dir + "/index.json", identity);
  ASSERT_EQ(manifest.size(), 2u);
  EXPECT_EQ(fs::path(manifest[0]).filename(), "b.pt");

  std::ofstream(dir + "/bad.json") << R"({"models": [{"name": "no file"}]})";
  EXPECT_THROW(readModelList(dir + "/bad.json", identity), UserError);
  // The MCP server's confinement sees every path.
  EXPECT_THROW(readModelList(dir + "/list.txt",
                             [](const std::string& path) -> std::string {
                               throw UserError("outside the workspace: " + path);
                             }),
               UserError);
}

// A glob's base is confined before the glob is expanded, and the error names the list's line:
// '/etc/*' answered "path '/etc/ODBCDataSources' is outside the workspace", which told a list's
// writer which files exist outside it (issue 34).
TEST(SweepModelList, AGlobOutsideTheWorkspaceNamesItsLineNotItsMatches) {
  const std::string dir = freshDir("confined-globs");
  fs::create_directories(dir + "/zoo");
  std::ofstream(dir + "/zoo/a.pt") << "x";
  fs::create_symlink("/etc/hostname", dir + "/zoo/leak.pt");
  const std::string root = fs::weakly_canonical(dir).string();
  const auto confined = [&](const std::string& path) -> std::string {
    const std::string real = fs::weakly_canonical(path).string();
    if (real.rfind(root, 0) != 0) throw UserError("path '" + real + "' is outside the workspace");
    return real;
  };
  const auto errorOf = [&](const std::string& lines) {
    std::ofstream(dir + "/list.txt") << lines;
    try {
      readModelList(dir + "/list.txt", confined);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string outside = errorOf("zoo/a.pt\n/etc/*\n");
  EXPECT_NE(outside.find("list.txt:2: '/etc/*': path '/etc' is outside the workspace"),
            std::string::npos)
      << outside;
  EXPECT_EQ(outside.find("/etc/", outside.find("'/etc/*'") + 7), std::string::npos) << outside;
  const std::string climbing = errorOf("zoo/../../*/*.pt\n");
  EXPECT_NE(climbing.find("list.txt:1: 'zoo/../../*/*.pt'"), std::string::npos) << climbing;
  // What leads outside after the base (a link, '..' after a wildcard) counts as no match, so the
  // answer is the same whether or not the outside file exists.
  std::ofstream(dir + "/list.txt") << "zoo/*.pt\n";
  const auto models = readModelList(dir + "/list.txt", confined);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(fs::path(models[0]).filename(), "a.pt");
  EXPECT_EQ(errorOf("zoo/leak*.pt\n"), dir + "/list.txt:1: 'zoo/leak*.pt' matches no archive");
  // '..' after a wildcard is read as the path it spells (the wildcard's own component
  // climbed out of): its base is confined like any other, before anything is matched.
  EXPECT_EQ(errorOf("zoo/*/../../../../../../etc/host*\n"),
            dir +
                "/list.txt:1: 'zoo/*/../../../../../../etc/host*': path '/etc' is outside the "
                "workspace");
}

json entry(const std::string& model, const std::string& category, bool covered,
           const std::string& verdict, std::vector<std::string> blockers = {}) {
  return {{"model", model},       {"name", model},           {"family", "llama"},
          {"category", category}, {"covered", covered},      {"verdict", verdict},
          {"blockers", blockers}, {"sha256", "sha-" + model}};
}

json sweepOf(const std::string& id, const std::string& finished, json models) {
  return {{"schema", "stickler.sweep"},
          {"version", 1},
          {"id", id},
          {"started", finished},
          {"finished", finished},
          {"profile", "spyre-2026"},
          {"key", "k"},
          {"catalog", json::array()},
          {"shard", {{"index", 0}, {"count", 1}}},
          {"models", models},
          {"summary", summarizeSweep(models)}};
}

TEST(SweepSummary, CountsRanksBlockersAndDiffs) {
  const json before =
      json::array({entry("a", "pass", true, "pass"),
                   entry("b", "no adapter", false, "blocked", {"unsupported op aten::topk"}),
                   entry("c", "pass", true, "pass")});
  const json after =
      json::array({entry("a", "layout rule stick-mismatch", false, "blocked",
                         {"layout rule stick-mismatch", "unsupported op aten::topk"}),
                   entry("b", "pass", true, "pass"), entry("d", "timeout", true, "timed_out")});
  const json summary = summarizeSweep(after);
  EXPECT_EQ(summary["models"], 3);
  EXPECT_EQ(summary["covered"], 2);
  EXPECT_EQ(summary["passing"], 1);
  EXPECT_EQ(summary["by_category"]["layout rule"], 1);
  EXPECT_EQ(summary["by_category"]["timeout"], 1);
  EXPECT_EQ(categoryKind("unsupported op aten::topk"), "unsupported op");
  EXPECT_EQ(categoryKind("runtime abort in model.layers.0"), "runtime abort");

  const json diff = diffSweeps(sweepOf("s1", "t1", before), sweepOf("s2", "t2", after));
  ASSERT_EQ(diff["newly_broken"].size(), 1u);
  EXPECT_EQ(diff["newly_broken"][0]["model"], "a");
  EXPECT_EQ(diff["newly_broken"][0]["before"], "pass");
  ASSERT_EQ(diff["newly_fixed"].size(), 1u);
  EXPECT_EQ(diff["newly_fixed"][0]["model"], "b");
  EXPECT_EQ(diff["added"][0]["model"], "d");
  EXPECT_EQ(diff["removed"][0]["model"], "c");

  const json ranked = summarizeSweep(
      json::array({entry("x", "no adapter", false, "blocked", {"unsupported op aten::topk"}),
                   entry("y", "no adapter", false, "blocked",
                         {"unsupported op aten::topk", "layout rule core-span"})}));
  EXPECT_EQ(ranked["blockers"][0]["blocker"], "unsupported op aten::topk");
  EXPECT_EQ(ranked["blockers"][0]["models"], 2);
}

TEST(SweepHistoryStore, RecordsPreviousReusesAndPrunes) {
  const std::string dir = freshDir("history");
  SweepHistory history(SweepHistory::pathFor(dir));
  history.record(
      sweepOf("s1", "2026-12-01T01:00:00Z", json::array({entry("a", "pass", true, "pass")})));
  history.record(sweepOf("s2", "2026-12-02T01:00:00Z",
                         json::array({entry("a", "timeout", false, "timed_out")})));
  EXPECT_EQ(history.points().size(), 2u);
  EXPECT_EQ(history.points()[1].passing, 0);
  EXPECT_EQ(history.previous("s2")->at("id"), "s1");
  EXPECT_FALSE(history.previous("s1").has_value());
  EXPECT_EQ(history.latest()->at("id"), "s2");
  // The newest entry of that archive under that key.
  const auto reused = history.reusable("sha-a", "k");
  ASSERT_TRUE(reused.has_value());
  EXPECT_EQ(reused->at("reused_from"), "s2");
  EXPECT_FALSE(history.reusable("sha-a", "another key").has_value());
  // Recording a sweep again replaces it.
  history.record(
      sweepOf("s2", "2026-12-02T01:00:00Z", json::array({entry("a", "pass", true, "pass")})));
  EXPECT_EQ(history.points()[1].passing, 1);
  EXPECT_EQ(history.prune(1), std::vector<std::string>{"s1"});
  EXPECT_EQ(history.points().size(), 1u);
  EXPECT_FALSE(history.load("s1").has_value());
}

TEST(SweepPages, TheChartHasAPointPerSweepAndJUnitACasePerModel) {
  const json sweep = sweepOf("s2", "2026-12-02T01:00:00Z",
                             json::array({entry("a<b>", "pass", true, "pass"),
                                          entry("c", "no adapter", false, "blocked")}));
  const std::vector<SweepPoint> points = {{"s1", "2026-12-01T01:00:00Z", "spyre-2026", 2, 2, 2},
                                          {"s2", "2026-12-02T01:00:00Z", "spyre-2026", 2, 1, 1}};
  const std::string page = renderSweepHtml(sweep, points);
  size_t circles = 0;
  for (size_t at = page.find("<circle"); at != std::string::npos; at = page.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, 4u);  // two sweeps, two lines
  EXPECT_NE(page.find("a&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  const std::string xml = renderSweepJunit(sweep);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("type=\"no adapter\""), std::string::npos);
}

TEST(SweepPages, APagedResultListsTheModelsThatDoNotPass) {
  json models = json::array();
  for (int i = 0; i < 30; ++i) {
    models.push_back(i % 3 == 0 ? entry("m" + std::to_string(i), "no adapter", false, "blocked")
                                : entry("m" + std::to_string(i), "pass", true, "pass"));
  }
  json sweep = sweepOf("s", "t", models);
  sweep["out"] = "/w/night";
  const json paged = pagedSweep(sweep, 4);
  EXPECT_EQ(paged["models_total"], 30);
  ASSERT_EQ(paged["models"].size(), 4u);
  for (const json& model : paged["models"]) EXPECT_EQ(model["category"], "no adapter");
  EXPECT_EQ(paged["summary"], sweep["summary"]);
  EXPECT_NE(paged["models_note"].get<std::string>().find("/w/night/sweep.json"), std::string::npos);
  EXPECT_EQ(pagedSweep(sweep, 0), sweep);  // the command line: everything
}

TEST(Retention, DeletesWhatIsOlderThanThePolicyAndNothingElse) {
  const std::string root = freshDir("retention");
  fs::create_directories(root + "/stickler-reports");
  fs::create_directories(root + "/stickler-repros/llama-tiny/old-bundle");
  fs::create_directories(root + "/stickler-repros/llama-tiny/new-bundle");
  std::ofstream(root + "/stickler-reports/old-report.json") << "{}";
  std::ofstream(root + "/stickler-reports/new-report.json") << "{}";
  std::ofstream(root + "/stickler-repros/llama-tiny/old-bundle/repro.pt") << "12345";
  std::ofstream(root + "/outside.json") << "{}";
  fs::create_symlink(root + "/outside.json", root + "/stickler-reports/link.json");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24 * 40);
  fs::last_write_time(root + "/stickler-reports/old-report.json", old);
  fs::last_write_time(root + "/stickler-repros/llama-tiny/old-bundle", old);
  fs::last_write_time(root + "/outside.json", old);

  RetentionPolicy policy;
  policy.keep_days = 30;
  const json dry = pruneWorkspace(root, policy, /*dry_run=*/true);
  EXPECT_EQ(dry["reports"], json::array({"old-report"}));
  EXPECT_TRUE(fs::exists(root + "/stickler-reports/old-report.json"));
  const json pruned = pruneWorkspace(root, policy);
  EXPECT_EQ(pruned["reports"], json::array({"old-report"}));
  EXPECT_EQ(pruned["repros"].size(), 1u);
  EXPECT_EQ(pruned["bytes"], 7);  // "{}" and "12345"
  EXPECT_FALSE(fs::exists(root + "/stickler-reports/old-report.json"));
  EXPECT_FALSE(fs::exists(root + "/stickler-repros/llama-tiny/old-bundle"));
  EXPECT_TRUE(fs::exists(root + "/stickler-reports/new-report.json"));
  EXPECT_TRUE(fs::exists(root + "/stickler-repros/llama-tiny/new-bundle"));
  EXPECT_TRUE(fs::exists(root + "/outside.json"));  // a link is never followed
  EXPECT_TRUE(fs::is_symlink(root + "/stickler-reports/link.json"));
}

}  // namespace
}  // namespace stickler
