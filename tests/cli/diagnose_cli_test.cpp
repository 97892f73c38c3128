// `stickler diagnose`: compile mode lists every blocker with the adapters that clear it and a
// repro bundle checked to fail the same way; run mode pins a device abort to its module.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/cli/fault_profiles.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::Result;
using testing::stickler;
using testing::zooPath;

// The arguments of a bundle's command line ("stickler run ARCHIVE --backend B").
std::vector<std::string> commandArguments(const std::string& command) {
  std::istringstream words(command);
  std::vector<std::string> arguments;
  for (std::string word; words >> word;) arguments.push_back(word);
  arguments.erase(arguments.begin());  // "stickler"
  return arguments;
}

TEST(DiagnoseCli, CompileModeGivesEachBlockerItsAdaptersAndACheckedRepro) {
  const std::string bundles = ::testing::TempDir() + "repros-" + std::to_string(::getpid());
  const Result result = stickler({"diagnose", zooPath("gpt2-tiny.pt"), "--profile",
                                  "spyre-2025-clean", "--bundle-dir", bundles, "--json"});
  EXPECT_EQ(result.status, 3) << result.err;  // blocked, as `stickler run` says
  const json report = json::parse(result.out);
  EXPECT_EQ(report["schema"], "stickler.diagnose");
  EXPECT_EQ(report["mode"], "compile");
  ASSERT_EQ(report["blockers"].size(), 3u) << report["blockers"].dump(2);
  EXPECT_EQ(report["repro_bundles"], 3);
  std::set<std::string> adapters;
  for (const auto& blocker : report["blockers"]) {
    for (const auto& name : blocker["adapters"]) adapters.insert(name);
    // The knowledge base's pages on the operator and rule come with it.
    std::set<std::string> hints;
    for (const auto& hint : blocker["hints"]) hints.insert(hint["id"]);
    if (blocker["op"] == "aten::pow") {
      EXPECT_TRUE(hints.count("gotcha-torch-pow")) << blocker["hints"].dump();
    }
    if (blocker["rule"] == "weight-stick-alignment") {
      EXPECT_TRUE(hints.count("adapter-pad-logits-to-sticks")) << blocker["hints"].dump();
    }
    const json& repro = blocker["repro"];
    ASSERT_TRUE(repro.contains("archive")) << repro.dump();
    EXPECT_TRUE(repro["reproduces"]) << repro.dump();
    EXPECT_TRUE(std::filesystem::exists(repro["archive"].get<std::string>()));
    // The bundle's own command shows the same blocker.
    const Result replay = stickler(commandArguments(repro["command"]));
    EXPECT_EQ(replay.status, 3) << repro["command"] << "\n" << replay.out << replay.err;
    EXPECT_NE(replay.out.find("[" + blocker["rule"].get<std::string>() + "] " +
                              blocker["op"].get<std::string>()),
              std::string::npos)
        << replay.out;
    // Its input is the activation the model produced there, stored in the archive.
    const Result inspect = stickler({"inspect", repro["archive"], "--json"});
    ASSERT_EQ(inspect.status, 0) << inspect.err;
    const json card = json::parse(inspect.out);
    EXPECT_EQ(card["inputs"][0]["kind"], "captured") << card["inputs"].dump();
  }
  EXPECT_EQ(adapters, (std::set<std::string>{"pad-logits-to-sticks", "pow-cube-as-mul"}));
  // A repro is a model like any other: the adapter meant for its gap brings it to a pass, and
  // the adapted archive keeps the captured inputs.
  const std::string pow_repro = report["blockers"][0]["repro"]["archive"];
  const std::string adapted = bundles + "/adapted.pt";
  const Result adapt =
      stickler({"adapt", pow_repro, "--profile", "spyre-2025-clean", "--save", adapted});
  EXPECT_EQ(adapt.status, 0) << adapt.out << adapt.err;
  EXPECT_NE(adapt.out.find("pow-cube-as-mul"), std::string::npos) << adapt.out;
  const Result rerun = stickler({"run", adapted, "--backend", "spyre-sim:spyre-2025-clean"});
  EXPECT_EQ(rerun.status, 0) << rerun.out << rerun.err;
  std::filesystem::remove_all(bundles);
}

TEST(DiagnoseCli, AnAdaptedModelHasNothingLeftToDiagnose) {
  const Result result = stickler(
      {"diagnose", zooPath("gpt2-tiny.pt"), "--profile", "spyre-2025-clean", "--adapt", "--json"});
  EXPECT_EQ(result.status, 0) << result.err;
  const json report = json::parse(result.out);
  EXPECT_TRUE(report["blockers"].empty());
  EXPECT_EQ(report["adapters_applied"].size(), 2u);
}

TEST(DiagnoseCli, RunModePinsADeviceAbortToItsAttentionModule) {
  const Result result =
      stickler({"diagnose", zooPath("qwen2-hd128.pt"), "--profile",
                testing::testProfile("abort-in-attention.json"), "--mode", "run", "--json"});
  EXPECT_EQ(result.status, 4) << result.err;  // aborted, as `stickler run` says
  const json report = json::parse(result.out);
  ASSERT_TRUE(report.contains("failing_module")) << report.dump(2);
  EXPECT_EQ(report["failing_module"]["module"], "model.layers.0.self_attn");
  EXPECT_EQ(report["failing_module"]["op"], "aten::softmax");
  EXPECT_EQ(report["failing_module"]["alone_on_device"], "aborted");
  EXPECT_TRUE(report["failing_module"]["confirmed"]);
  // Its repro: the softmax alone aborts only at its module path (the fault names the path),
  // so the bundle keeps the path, and its command aborts the same way.
  const json& repro = report["failing_module"]["repro"];
  ASSERT_TRUE(repro.contains("command")) << repro.dump(2);
  EXPECT_TRUE(repro["reproduces"]) << repro.dump(2);
  EXPECT_EQ(repro["scope"], "operator, at its module path model.layers.0.self_attn");
  EXPECT_EQ(repro["grown"], 0);  // the softmax at no path could not abort: it is not tried
  EXPECT_EQ(repro["observed"], "aborted in aten::softmax");
  const Result replay = stickler(commandArguments(repro["command"]));
  EXPECT_EQ(replay.status, 4) << replay.out << replay.err;
}

TEST(DiagnoseCli, AReproGrowsToTheModuleThatFailsTheSameWay) {
  // The compiler fails on a layer_norm fused with the add before it. The layer_norm at its
  // path (or alone in its own module) compiles; its layer, which holds the add, fails the same
  // way. The layer_norm at no path is not tried: the fault names its path.
  const std::string bundles = ::testing::TempDir() + "grown-" + std::to_string(::getpid());
  const Result result = stickler({"diagnose", zooPath("vit-tiny.pt"), "--profile",
                                  testing::testProfile("fused-layernorm-compile-error.json"),
                                  "--bundle-dir", bundles, "--json"});
  EXPECT_EQ(result.status, 3) << result.err;
  const json report = json::parse(result.out);
  EXPECT_EQ(report["status"], "compiler_error");
  const json& failure = report["compiler_failure"];
  EXPECT_EQ(failure["module"], "encoder.layer.1.layernorm_after");
  EXPECT_EQ(failure["op"], "aten::layer_norm");
  const json& repro = failure["repro"];
  ASSERT_TRUE(repro.contains("command")) << failure.dump(2);
  EXPECT_TRUE(repro["reproduces"]) << repro.dump(2);
  EXPECT_EQ(repro["scope"], "module encoder.layer.1");
  EXPECT_EQ(repro["grown"], 2);  // the operator at its path; its module; its layer
  const Result replay = stickler(commandArguments(repro["command"]));
  EXPECT_EQ(replay.status, 3) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("internal compiler error: fused add + layer_norm"), std::string::npos)
      << replay.out;
  // The layer inside keeps its modules, so a fault that names one still finds it.
  const Result inspect = stickler({"inspect", repro["archive"], "--json"});
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("\"encoder.layer.1.layernorm_after\""), std::string::npos);
  std::filesystem::remove_all(bundles);
}

// Numerics mode's onset is the attention's dropout, which only carries the bad softmax before
// it: alone, on the inputs the model fed it, it does not fail, so its reproducer grows to the
// attention module, which does, and passes without the profile's fault.
TEST(DiagnoseCli, NumericsModeWritesAReproGrownToTheModuleThatFails) {
  const std::string profile =
      testing::scaledOperatorProfile("aten::softmax", "transformer.h.0.attn");
  const std::string bundles = ::testing::TempDir() + "numerics-repros-" + std::to_string(getpid());
  const Result result =
      stickler({"diagnose", zooPath("gpt2-tiny.pt"), "--profile", profile, "--adapt", "--mode",
                "numerics", "--bundle-dir", bundles, "--json"});
  ASSERT_EQ(result.status, 1) << result.err;
  const json report = json::parse(result.out);
  ASSERT_FALSE(report["deviations"].empty()) << report.dump(2);
  EXPECT_EQ(report["deviations"][0]["module"], "transformer.h.0.attn.attn_dropout");
  const json& repro = report["repro"];
  ASSERT_TRUE(repro.value("reproduces", false)) << repro.dump(2);
  EXPECT_EQ(repro["scope"], "module transformer.h.0.attn");
  EXPECT_EQ(repro["grown"], 1);
  EXPECT_TRUE(repro["numerics"]["clean_passes"]);
  const Result alone = stickler(commandArguments(repro["command"]));
  EXPECT_EQ(alone.status, 1) << alone.out << alone.err;
  const Result clean = stickler(commandArguments(repro["numerics"]["clean_command"]));
  EXPECT_EQ(clean.status, 0) << clean.out << clean.err;
}

// Numerics mode makes the model's host while it runs the model for its reference
// (model_host_ahead.h), and compares in that host: one host made, ahead, for the comparison.
TEST(DiagnoseCli, NumericsModeMakesTheModelsHostBesideItsReferenceRun) {
  const std::string bundles = ::testing::TempDir() + "ahead-repros-" + std::to_string(getpid());
  const Result result =
      testing::sticklerIn("",
                          {"diagnose", zooPath("vit-tiny.pt"), "--profile",
                           testing::wrongScaleProfile("encoder.layer.1.attention.output.dense"),
                           "--mode", "numerics", "--bundle-dir", bundles, "--json"},
                          {"STICKLER_PHASE_TIMES=1"});
  std::filesystem::remove_all(bundles);
  ASSERT_EQ(result.status, 1) << result.err;
  const json report = json::parse(result.out);
  ASSERT_FALSE(report["deviations"].empty()) << report.dump(2);
  const std::string made = "model host started and made vit-tiny ";
  const size_t ahead = result.err.find(made + "ahead, beside the reference run (");
  EXPECT_NE(ahead, std::string::npos) << result.err;
  EXPECT_EQ(result.err.find(made), ahead) << result.err;
  EXPECT_EQ(result.err.rfind(made), ahead) << result.err;
}

TEST(DiagnoseCli, RunModeRunsTheAdaptedModel) {
  // Blocked as it stands on spyre-2025-clean; with the catalog's adapters it runs and passes.
  const Result result = stickler({"diagnose", zooPath("gpt2-tiny.pt"), "--profile",
                                  "spyre-2025-clean", "--adapt", "--mode", "run", "--json"});
  EXPECT_EQ(result.status, 0) << result.out << result.err;
  const json report = json::parse(result.out);
  EXPECT_EQ(report["verdict"], "pass");
  EXPECT_EQ(report["adapters_applied"].size(), 2u);
  EXPECT_FALSE(report.contains("failing_module"));
}

TEST(DiagnoseCli, BlockersAreRankedByHowManyModelsTheyStop) {
  const Result result =
      stickler({"blockers", "--profile", "spyre-2025-clean", "--model", zooPath("gpt2-tiny.pt"),
                "--model", zooPath("llama-tiny.pt"), "--model", zooPath("vit-tiny.pt"), "--json"});
  ASSERT_EQ(result.status, 0) << result.err;
  const json report = json::parse(result.out);
  ASSERT_EQ(report["models"].size(), 3u);
  EXPECT_TRUE(report["models"][2]["compiles"]);  // vit-tiny has no gap on this profile
  const json& ranking = report["ranking"];
  ASSERT_FALSE(ranking.empty());
  for (size_t i = 1; i < ranking.size(); ++i) {
    EXPECT_GE(ranking[i - 1]["models_blocked"].get<int64_t>(),
              ranking[i]["models_blocked"].get<int64_t>());
  }
  bool found_pow = false;
  for (const auto& entry : ranking) {
    if (entry["op"] != "aten::pow") continue;
    found_pow = true;
    EXPECT_EQ(entry["rule"], "unsupported-op");
    EXPECT_EQ(entry["models"], json({"gpt2-tiny", "llama-tiny"}));
    EXPECT_EQ(entry["models_blocked"], 2);
  }
  EXPECT_TRUE(found_pow) << ranking.dump(2);
  const Result none = stickler({"blockers", "--profile", "spyre-2025-clean"});
  EXPECT_EQ(none.status, 2);
}

TEST(DiagnoseCli, AnUnknownModeIsABadInput) {
  const Result result = stickler(
      {"diagnose", zooPath("gpt2-tiny.pt"), "--profile", "spyre-2025-clean", "--mode", "numbers"});
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("mode"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace stickler
