// `stickler localize` on the zoo: a test fault profile corrupts one module of each family (its
// outputs scaled by 3, on top of spyre-2025-clean), and localization must name that module,
// confirm it, and stay within ceil(log2 M) + 4 device runs for M modules.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::Result;
using testing::stickler;
using testing::zooPath;

struct FaultCase {
  const char* model;
  const char* module;  // the module whose outputs the fault corrupts
};

// A profile extending spyre-2025-clean whose only fault scales `module`'s outputs by 3.
std::string faultProfile(const std::string& module) {
  const std::string path = ::testing::TempDir() + "fault-" + module + ".json";
  const json profile = {
      {"version", 1},
      {"extends", "spyre-2025-clean"},
      {"name", "test-wrong-scale"},
      {"description", "Test profile: one module's outputs come out three times too large."},
      {"faults",
       {{{"id", "wrong-scale"},
         {"match", {{"module", module}}},
         {"effect", {{"kind", "wrong_scale"}, {"factor", 3.0}}}}}}};
  std::ofstream(path) << profile.dump(2);
  return path;
}

json localize(const std::string& model, const std::string& profile) {
  const Result result =
      stickler({"localize", zooPath(model + ".pt"), "--profile", profile, "--adapt", "--json"});
  EXPECT_EQ(result.status, 0) << result.err;
  return json::parse(result.out);
}

class LocalizeFamily : public ::testing::TestWithParam<FaultCase> {};

TEST_P(LocalizeFamily, NamesTheCorruptedModuleAndConfirmsIt) {
  const json report = localize(GetParam().model, faultProfile(GetParam().module));
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], GetParam().module);
  EXPECT_EQ(report["confirmation"]["alone_on_device"], "fail");
  EXPECT_EQ(report["confirmation"]["everything_else_on_device"], "pass");
  EXPECT_TRUE(report["determinism"]["deterministic"]);
  const int64_t units = report["units"];
  const int64_t target = static_cast<int64_t>(std::ceil(std::log2(units))) + 4;
  EXPECT_EQ(report["device_run_target"], target);
  EXPECT_LE(report["device_runs"].get<int64_t>(), target);
  EXPECT_EQ(report["runs"].size(), report["device_runs"].get<size_t>());
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, LocalizeFamily,
    ::testing::Values(FaultCase{"bamba-tiny", "model.layers.1.feed_forward.down_proj"},
                      FaultCase{"bert-tiny", "encoder.layer.1.intermediate.dense"},
                      FaultCase{"gpt2-tiny", "transformer.h.0.mlp.c_proj"},
                      FaultCase{"granite-hd80", "model.layers.0.self_attn.v_proj"},
                      FaultCase{"llama-tiny", "model.layers.1.mlp.down_proj"},
                      FaultCase{"mixtral-tiny", "model.layers.1.self_attn.o_proj"},
                      FaultCase{"mpnet-tiny", "encoder.layer.1.output.dense"},
                      FaultCase{"qwen2-hd128", "model.layers.0.mlp.down_proj"},
                      FaultCase{"t5-encoder-tiny", "encoder.block.0.layer.1.DenseReluDense.wo"},
                      FaultCase{"vit-tiny", "encoder.layer.1.attention.output.dense"},
                      FaultCase{"xlm-roberta-tiny", "encoder.layer.1.output.dense"}),
    [](const auto& info) { return testing::testName(info.param.model); });

TEST(LocalizeCli, ARuntimeAbortIsPinnedToItsAttentionModule) {
  // The device aborts in the softmax of the first attention layer: an aborted run counts as a
  // failing one, so the bisection finds the module whose own nodes hold that softmax.
  const json report = localize("qwen2-hd128", testing::testProfile("abort-in-attention.json"));
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], "model.layers.0.self_attn");
  EXPECT_EQ(report["whole_model_verdict"], "aborted");
  EXPECT_EQ(report["confirmation"]["alone_on_device"], "aborted");
}

TEST(LocalizeCli, AModelThatPassesHasNothingToLocalize) {
  const json report = localize("vit-tiny", "spyre-2025-clean");
  EXPECT_EQ(report["status"], "passes");
  EXPECT_EQ(report["device_runs"], 2);  // the determinism check only
  EXPECT_FALSE(report.contains("culprit"));
}

TEST(LocalizeCli, ABlockedModelIsReportedWithExitStatusThree) {
  const Result result =
      stickler({"localize", zooPath("gpt2-tiny.pt"), "--profile", "spyre-2025-clean", "--json"});
  EXPECT_EQ(result.status, 3) << result.err;
  const json report = json::parse(result.out);
  EXPECT_EQ(report["status"], "blocked");
  EXPECT_EQ(report["device_runs"], 0);
}

}  // namespace
}  // namespace stickler
