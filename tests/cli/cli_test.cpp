// The `stickler` command line as a user runs it: exit statuses, one-line errors, output.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using testing::Result;
using testing::stickler;

TEST(Cli, InspectPrintsTheCollapsedTreeAndARunSummary) {
  const Result r = stickler({"inspect", testing::zooPath("gpt2-tiny.pt")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("h.0-1: GPT2Block x2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("input_ids"), std::string::npos);
  EXPECT_NE(r.out.find("[1, 16, 1000]"), std::string::npos);
  EXPECT_NE(r.out.find("aten::addmm x8"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(Cli, InspectWithoutARunSaysItShowsShapesOnly) {
  const Result r = stickler({"inspect", testing::zooPath("gpt2-tiny.pt"), "--run", "no"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Outputs (shapes only, not run: not asked to (run: no)):"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[1, 16, 1000]"), std::string::npos);
  EXPECT_EQ(r.out.find("min "), std::string::npos) << r.out;
  const Result bad = stickler({"inspect", testing::zooPath("gpt2-tiny.pt"), "--run", "maybe"});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("run"), std::string::npos) << bad.err;
}

TEST(Cli, InspectJsonIsTheDocumentedReport) {
  const Result r = stickler({"inspect", testing::zooPath("llama-tiny.pt"), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("schema"), "stickler.inspect");
  EXPECT_GT(report.at("nodes").size(), 100u);
  const Result without =
      stickler({"inspect", testing::zooPath("llama-tiny.pt"), "--json", "--no-include-nodes"});
  ASSERT_EQ(without.status, 0) << without.err;
  EXPECT_FALSE(nlohmann::json::parse(without.out).contains("nodes"));
}

// An archive's record of how it was adapted is reported as it is; one that is not such a record
// is named, and the rest of the report stands.
TEST(Cli, InspectNamesAMalformedRecordOfAdapters) {
  const std::string archive = testing::uniqueTempPath("bad-adapters-record.pt");
  const std::string command =
      "/usr/bin/python3 -c \"import shutil, sys, zipfile\n"
      "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
      "with zipfile.ZipFile(sys.argv[2], 'a') as out:\n"
      "    root = out.namelist()[0].split('/')[0]\n"
      "    out.writestr(root + '/extra/stickler/adapters.json', '{\\\"adapters\\\": [1]}')\" " +
      testing::zooPath("gpt2-tiny.pt") + " " + archive;
  ASSERT_EQ(std::system(command.c_str()), 0);
  const Result r = stickler({"inspect", archive, "--json", "--no-include-nodes"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["adapted"].value("error", ""),
            "stickler/adapters.json is not a record of adapters")
      << report["adapted"];
  EXPECT_EQ(report["model"]["name"], "gpt2-tiny");
  std::remove(archive.c_str());
}

TEST(Cli, ForeignModelWithInputFlags) {
  const auto& foreign = testing::zooIndex().at("foreign").at(0);
  const Result r = stickler(
      {"inspect", testing::zooPath(foreign.at("file")), "--input", foreign.at("inputs").at(0)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("downsample.0: Conv2d"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(from --input)"), std::string::npos);
}

TEST(Cli, BrokenArchivesExitTwoWithOneLine) {
  for (const auto& entry : testing::zooIndex().at("broken")) {
    const Result r = stickler({"inspect", testing::zooPath(entry.at("file"))});
    EXPECT_EQ(r.status, 2) << entry.at("file");
    EXPECT_NE(r.err.find(entry.at("error").get<std::string>()), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(Cli, BadFlagsExitTwo) {
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  Result r = stickler({"inspect", model, "--input", "input_ids:1x16:float8"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown dtype 'float8'"), std::string::npos) << r.err;

  // A billion float32 values grew inspect to 24 GB before the kernel killed it; a shape whose
  // product overflows was an internal error (exit 70).
  for (const char* huge : {"input_ids:1000000000:int64:tokens=1000",
                           "input_ids:100000x100000x100000:int64:tokens=1000"}) {
    r = stickler({"inspect", model, "--input", huge});
    EXPECT_EQ(r.status, 2) << huge;
    EXPECT_NE(r.err.find("holds more than 268435456 elements"), std::string::npos) << r.err;
  }

  r = stickler({"inspect", model, "--input", "tokens:1x16:int64"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("the model's argument is 'input_ids'"), std::string::npos) << r.err;

  r = stickler({"inspect", model, "--no-such-flag"});
  EXPECT_EQ(r.status, 2);
  r = stickler({"inspect"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("model"), std::string::npos) << r.err;
  r = stickler({});
  EXPECT_EQ(r.status, 2);
  r = stickler({"frobnicate"});
  EXPECT_EQ(r.status, 2);
}

// Flags are checked against the operation's input schema, as MCP arguments are.
TEST(Cli, FlagValuesAreCheckedAgainstTheInputSchema) {
  const std::string model = testing::zooPath("gpt2-tiny.pt");
  Result r = stickler({"diagnose", model, "--profile", "spyre-2026", "--mode", "fly"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("field 'mode' must be one of [\"compile\",\"run\",\"numerics\"], not "
                       "\"fly\""),
            std::string::npos)
      << r.err;
  r = stickler({"report", "--format", "pdf"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("field 'format' must be one of"), std::string::npos) << r.err;
}

TEST(Cli, ProfilesListsTheShippedProfiles) {
  const Result r = stickler({"profiles"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("spyre-2025 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spyre-2026-clean"), std::string::npos) << r.out;
  const Result json_run = stickler({"profiles", "--json"});
  ASSERT_EQ(json_run.status, 0) << json_run.err;
  EXPECT_EQ(nlohmann::json::parse(json_run.out).at("schema"), "stickler.profiles");
  EXPECT_EQ(stickler({"profiles", "extra"}).status, 2);
}

TEST(Cli, HelpListsTheOperations) {
  const Result r = stickler({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace stickler
