// `stickler run` and `stickler check` as a user runs them: verdicts and exit statuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"
#include "tools/framework/exit_status.h"

namespace stickler {
namespace {

using testing::Result;
using testing::stickler;
using testing::zooPath;

// docs/cli.md's table: one status per verdict, decided in the tools layer alone.
TEST(ExitStatus, EveryVerdictHasTheDocumentedStatus) {
  EXPECT_EQ(exitCode(exitStatusOf(RunVerdict::kPass)), 0);
  EXPECT_EQ(exitCode(exitStatusOf(RunVerdict::kFail)), 1);
  EXPECT_EQ(exitCode(exitStatusOf(RunVerdict::kBlocked)), 3);
  for (RunVerdict incomplete : {RunVerdict::kAborted, RunVerdict::kTimedOut, RunVerdict::kFailed}) {
    EXPECT_EQ(exitCode(exitStatusOf(incomplete)), 4) << runVerdictName(incomplete);
  }
}

TEST(RunCli, PassesOnTheCleanDevice) {
  const Result r =
      stickler({"run", zooPath("qwen2-hd128.pt"), "--backend", "spyre-sim:spyre-2026-clean"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top-1 agrees at 16/16 positions"), std::string::npos) << r.out;
}

TEST(RunCli, ExitsOneWhenAFaultCorruptsAModule) {
  const std::string model = zooPath("vit-tiny.pt");
  EXPECT_EQ(stickler({"run", model, "--backend", "spyre-sim:spyre-2026-clean"}).status, 0);
  const Result r =
      stickler({"run", model, "--backend",
                "spyre-sim:" + testing::testProfile("layernorm-after-add.json"), "--json"});
  EXPECT_EQ(r.status, 1) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("verdict"), "fail");
  EXPECT_EQ(report.at("comparison").at("outputs").at(0).at("verdict"), "fail");
  EXPECT_GT(report.at("comparison").at("outputs").at(0).at("non_finite").get<int64_t>(), 0);
}

TEST(RunCli, ExitsThreeOnBlockersAndListsThem) {
  const Result r = stickler({"run", zooPath("gpt2-tiny.pt"), "--backend", "spyre-sim:spyre-2025"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("BLOCKED"), std::string::npos);
  EXPECT_NE(r.out.find("[unsupported-op] aten::pow in transformer.h.0.mlp.act (NewGELUActivation)"),
            std::string::npos)
      << r.out;
}

TEST(RunCli, ExitsFourOnARuntimeAbortAndSaysWhere) {
  const Result r =
      stickler({"run", zooPath("qwen2-hd128.pt"), "--backend",
                "spyre-sim:" + testing::testProfile("abort-in-attention.json"), "--json"});
  EXPECT_EQ(r.status, 4) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("verdict"), "aborted");
  EXPECT_EQ(report.at("run").at("module"), "model.layers.0.self_attn");
  EXPECT_EQ(report.at("run").at("op"), "aten::softmax");
  EXPECT_NE(report.at("run").at("device_log").get<std::string>().find("Assertion"),
            std::string::npos);
}

TEST(RunCli, CpuBackendsPass) {
  for (const std::string backend : {"cpu", "cpu64", "cpu-emulated:dl16", "cpu-emulated:bf16"}) {
    const Result r = stickler({"run", zooPath("vit-tiny.pt"), "--backend", backend});
    EXPECT_EQ(r.status, 0) << backend << "\n" << r.out << r.err;
  }
}

TEST(RunCli, BadBackendsAndModulesExitTwo) {
  Result r = stickler({"run", zooPath("vit-tiny.pt"), "--backend", "gpu"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown backend 'gpu'"), std::string::npos) << r.err;
  r = stickler({"run", zooPath("vit-tiny.pt"), "--backend", "spyre-sim:spyre-1999"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no device profile named 'spyre-1999'"), std::string::npos) << r.err;
  r = stickler({"run", zooPath("vit-tiny.pt"), "--module", "encoder.nope"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no module 'encoder.nope'"), std::string::npos) << r.err;
  r = stickler({"run", zooPath("vit-tiny.pt"), "--timeout", "0"});
  EXPECT_EQ(r.status, 2);
}

TEST(CheckCli, ListsBlockersWithWhereAndWhy) {
  const Result r =
      stickler({"check", zooPath("bamba-tiny.pt"), "--profile", "spyre-2025", "--json"});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto& counts = report.at("lowering").at("blocker_counts").at("unsupported_ops");
  for (const char* op : {"aten::softplus", "aten::pad", "aten::copy_", "aten::exp", "aten::roll",
                         "aten::slice_scatter", "aten::select_scatter"}) {
    EXPECT_TRUE(counts.contains(op)) << op;
  }
  const Result text = stickler({"check", zooPath("llama-tiny.pt")});
  EXPECT_NE(
      text.out.find("[rope-head-dim] aten::slice in model.layers.0.self_attn (LlamaAttention)"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("CPU fallbacks:"), std::string::npos);
}

}  // namespace
}  // namespace stickler
