// `stickler localize` on the zoo: a test fault profile corrupts one module of each family (its
// outputs scaled by 3, on top of spyre-2025-clean), and localization must name that module,
// confirm it, and stay within ceil(log2 M) + 4 device runs for M modules (then search its own
// operators).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
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
using testing::wrongScaleProfile;
using testing::zooPath;

struct FaultCase {
  const char* model;
  const char* module;  // the module whose outputs the fault corrupts
};

json localize(const std::string& model, const std::string& profile) {
  const std::string bundles = ::testing::TempDir() + "localize-repros-" + std::to_string(getpid());
  const Result result = stickler({"localize", zooPath(model + ".pt"), "--profile", profile,
                                  "--adapt", "--bundle-dir", bundles, "--json"});
  EXPECT_EQ(result.status, 0) << result.err;
  return json::parse(result.out);
}

class LocalizeFamily : public ::testing::TestWithParam<FaultCase> {};

TEST_P(LocalizeFamily, NamesTheCorruptedModuleAndConfirmsIt) {
  const json report = localize(GetParam().model, wrongScaleProfile(GetParam().module));
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], GetParam().module);
  EXPECT_EQ(report["confirmation"]["alone_on_device"], "fail");
  EXPECT_EQ(report["confirmation"]["everything_else_on_device"], "pass");
  EXPECT_TRUE(report["determinism"]["deterministic"]);
  const int64_t units = report["units"];
  const int64_t target = static_cast<int64_t>(std::ceil(std::log2(units))) + 4;
  EXPECT_EQ(report["device_run_target"], target);
  // The module search, up to the culprit's confirmation, within the target and no longer than
  // before minimal sets and budgets: two for determinism, a bisection to the culprit's
  // position, the culprit alone and everything but it.
  const json& cause = report["causes"][0];
  const int64_t module_runs = cause["first_run"].get<int64_t>() + cause["runs"].get<int64_t>() - 1;
  EXPECT_LE(module_runs, target);
  const int64_t culprit = report["culprit"]["position"].get<int64_t>() - 1;
  int64_t before = 4;
  for (int64_t pass = 0, fail = units; fail - pass > 1; ++before) {
    const int64_t middle = pass + (fail - pass) / 2;
    (culprit < middle ? fail : pass) = middle;
  }
  EXPECT_LE(module_runs, before);
  // Then the culprit's own operators, when it has several, in as many runs for K of them.
  const json& operators = report["culprit_operators"];
  const int64_t candidates = operators["candidates"];
  EXPECT_GE(candidates, 1);
  const int64_t operator_runs = operators["runs"];
  if (candidates > 1) {
    EXPECT_LE(operator_runs, static_cast<int64_t>(std::ceil(std::log2(candidates))) + 2);
  }
  EXPECT_EQ(report["device_runs"].get<int64_t>(), module_runs + operator_runs);
  EXPECT_EQ(report["runs"].size(), report["device_runs"].get<size_t>());
  // Compared in lockstep with the reference, the culprit is far over its derived threshold.
  EXPECT_EQ(report["culprit"]["deviation"]["over_threshold"], true) << report["culprit"].dump();
  EXPECT_GT(report["culprit"]["deviation"]["ratio_to_emulated"].get<double>(), 10.0);
  // The numerics' first onset is the culprit itself: the two agree.
  EXPECT_EQ(report["numerics_onset"]["relation"], "culprit") << report["numerics_onset"].dump();
  // Its reproducer, checked: a region of the culprit alone fails on the profile and passes
  // on the same profile without its fault.
  const json& repro = report["repro"];
  EXPECT_TRUE(repro.value("reproduces", false)) << repro.dump(2);
  EXPECT_TRUE(repro["numerics"].value("clean_passes", false)) << repro.dump(2);
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

// STICKLER_PHASE_TIMES=1 prints where a command's time goes, one line per phase on stderr (its
// model host's too); the JSON on stdout is the same, and without the variable nothing of it is
// printed.
TEST(LocalizeCli, PhaseTimesSayWhereTheTimeWent) {
  // Without the reproducer, whose checks run the region on the device too.
  const std::vector<std::string> args = {
      "localize",   zooPath("vit-tiny.pt"),
      "--profile",  wrongScaleProfile("encoder.layer.1.attention.output.dense"),
      "--no-repro", "--json"};
  const Result timed = testing::sticklerIn("", args, {"STICKLER_PHASE_TIMES=1"});
  ASSERT_EQ(timed.status, 0) << timed.err;
  const json report = json::parse(timed.out);
  const std::vector<std::string> phases = {
      "the archive's SHA-256",       "ran its example inputs",
      "lowered the whole model",     "module thresholds",
      "model host started and made", "saved the report " + report["report_id"].get<std::string>()};
  for (const std::string& phase : phases) {
    EXPECT_NE(timed.err.find(phase), std::string::npos) << phase << "\n" << timed.err;
  }
  size_t runs = 0;
  for (size_t at = 0;
       (at = timed.err.find("device run in its model host", at)) != std::string::npos; ++at) {
    ++runs;
  }
  EXPECT_EQ(runs, report["device_runs"].get<size_t>()) << timed.err;
  // The model's host is made beside the reference run (model_host_ahead.h), and it is the one
  // every device run used: no other host was made.
  const std::string made = "model host started and made vit-tiny";
  const size_t ahead = timed.err.find(made + " ahead, beside the reference run (");
  EXPECT_NE(ahead, std::string::npos) << timed.err;
  EXPECT_EQ(timed.err.find(made), ahead) << timed.err;
  EXPECT_EQ(timed.err.rfind(made), ahead) << timed.err;
  EXPECT_NE(timed.err.find("stickler phase "), std::string::npos);
  // The model host's own phases come through, named by the host.
  const size_t hosts = timed.err.find(" [host vit-tiny]\n");
  ASSERT_NE(hosts, std::string::npos) << timed.err;
  EXPECT_EQ(timed.err.rfind("stickler phase ", hosts), timed.err.rfind('\n', hosts) + 1)
      << timed.err;
  // Each line says what the process holds: its own (anonymous) memory, the part of it in large
  // tensors, the most of them alive at once since its previous line, and the part kept for
  // them, and its peak resident set during the phase, which holds the own memory at least (and
  // the mapped weights).
  const std::regex memory(
      R"(^stickler phase +[0-9.]+ s (?:\(\+[0-9.]+ s\) )?\[own ([0-9.]+) GB )"
      R"(\(large tensors ([0-9.]+), at most ([0-9.]+), kept ([0-9.]+)\), peak ([0-9.]+) GB\] )");
  size_t lines = 0;
  std::istringstream err(timed.err);
  for (std::string line; std::getline(err, line);) {
    if (line.rfind("stickler phase ", 0) != 0) continue;
    ++lines;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(line, match, memory)) << line;
    const double own = std::stod(match[1]);
    const double peak = std::stod(match[5]);
    EXPECT_GT(own, 0.0) << line;           // a LibTorch process holds megabytes of its own
    EXPECT_GE(peak + 0.005, own) << line;  // each rounded to 10 MB
    // Large tensors are part of the process's own memory (a zoo model has few or none), and
    // what is alive as the phase ends was alive since the previous line.
    const double large = std::stod(match[2]);
    EXPECT_LE(large, own + 0.005) << line;
    EXPECT_GE(std::stod(match[3]), large) << line;
  }
  EXPECT_GE(lines, phases.size());

  const Result plain = stickler(args);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.err.find("stickler phase"), std::string::npos) << plain.err;
  EXPECT_EQ(json::parse(plain.out)["culprit"], report["culprit"]);
}

TEST(LocalizeCli, ARuntimeAbortIsPinnedToItsAttentionModule) {
  // The device aborts in the softmax of the first attention layer: an aborted run counts as a
  // failing one, so the bisection finds the module whose own nodes hold that softmax.
  const json report = localize("qwen2-hd128", testing::testProfile("abort-in-attention.json"));
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], "model.layers.0.self_attn");
  EXPECT_EQ(report["whole_model_verdict"], "aborted");
  EXPECT_EQ(report["confirmation"]["alone_on_device"], "aborted");
  // Its reproducer is the run-failure kind: the softmax, alone, aborts the device the same way.
  EXPECT_TRUE(report["repro"].value("reproduces", false)) << report["repro"].dump(2);
  EXPECT_EQ(report["repro"]["observed"], "aborted in aten::softmax");
  EXPECT_FALSE(report["repro"].contains("numerics"));
}

TEST(LocalizeCli, AnAbsorbedDeviationIsReportedNotBlamed) {
  // Layer 0's attention output three times too large: far over its threshold, yet the layer
  // norms after it absorb it and the model passes end to end.
  const json report =
      localize("bert-tiny", wrongScaleProfile("encoder.layer.0.attention.output.dense"));
  EXPECT_EQ(report["status"], "passes") << report.dump(2);
  EXPECT_FALSE(report.contains("culprit"));
  ASSERT_EQ(report["absorbed"].size(), 1u) << report["absorbed"].dump(2);
  const json& absorbed = report["absorbed"][0];
  EXPECT_EQ(absorbed["module"], "encoder.layer.0.attention.output.dense");
  EXPECT_GT(absorbed["rel_l2"].get<double>(), 100 * absorbed["threshold"].get<double>());
  EXPECT_GT(absorbed["downstream_over_threshold"].get<int64_t>(), 0);
}

TEST(LocalizeCli, NondeterminismIsReportedNotBlamedOnALayer) {
  // One projection's reduction order changes from run to run (atomics): the two identical
  // whole-model runs disagree, and no module is named for it.
  const std::string path = ::testing::TempDir() + "racy.json";
  json profile = json::parse(std::ifstream(wrongScaleProfile("transformer.h.0.mlp.c_proj")));
  profile["faults"][0]["effect"] = {{"kind", "racy_reduction"}, {"relative", 0.01}};
  std::ofstream(path) << profile.dump(2);
  const json report = localize("gpt2-tiny", path);
  ASSERT_EQ(report["status"], "nondeterministic") << report.dump(2);
  EXPECT_FALSE(report["determinism"]["deterministic"]);
  EXPECT_FALSE(report.contains("culprit"));
  EXPECT_EQ(report["device_runs"], 2);
}

TEST(LocalizeCli, AbsorbedDeviationsBeforeACulpritAreReportedApart) {
  // Two faults: layer 0's attention output (absorbed) and layer 1's MLP output (the culprit).
  const std::string path = ::testing::TempDir() + "two-faults.json";
  json profile =
      json::parse(std::ifstream(wrongScaleProfile("encoder.layer.0.attention.output.dense")));
  profile["faults"].push_back({{"id", "wrong-scale-late"},
                               {"match", {{"module", "encoder.layer.1.intermediate.dense"}}},
                               {"effect", {{"kind", "wrong_scale"}, {"factor", 3.0}}}});
  std::ofstream(path) << profile.dump(2);
  const json report = localize("bert-tiny", path);
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], "encoder.layer.1.intermediate.dense");
  ASSERT_EQ(report["absorbed"].size(), 1u) << report["absorbed"].dump(2);
  EXPECT_EQ(report["absorbed"][0]["module"], "encoder.layer.0.attention.output.dense");
}

TEST(LocalizeCli, ThresholdsComeFromTheGoldenCacheKeyedByTheSettings) {
  const std::string cache = ::testing::TempDir() + "golden-" + std::to_string(::getpid());
  const char* previous = std::getenv("STICKLER_CACHE_DIR");
  const std::string restore = previous ? previous : "";
  ::setenv("STICKLER_CACHE_DIR", cache.c_str(), 1);
  const json first = localize("vit-tiny", "spyre-2025-clean");
  const json second = localize("vit-tiny", "spyre-2025-clean");
  const Result wider = stickler({"localize", zooPath("vit-tiny.pt"), "--profile",
                                 "spyre-2025-clean", "--threshold-margin", "8", "--json"});
  ::setenv("STICKLER_CACHE_DIR", restore.c_str(), 1);
  ASSERT_EQ(wider.status, 0) << wider.err;
  const json third = json::parse(wider.out);
  const json& a = first["numerics"];
  const json& b = second["numerics"];
  const json& c = third["numerics"];
  EXPECT_FALSE(a["thresholds"]["from_cache"]);
  EXPECT_TRUE(b["thresholds"]["from_cache"]);
  EXPECT_EQ(a["thresholds"]["cache_key"], b["thresholds"]["cache_key"]);
  EXPECT_FALSE(c["thresholds"]["from_cache"]);  // another margin, another key
  EXPECT_NE(a["thresholds"]["cache_key"], c["thresholds"]["cache_key"]);
  ASSERT_EQ(a["modules"].size(), c["modules"].size());
  ASSERT_FALSE(a["modules"].empty());
  for (size_t i = 0; i < a["modules"].size(); ++i) {
    EXPECT_EQ(a["modules"][i]["threshold"], b["modules"][i]["threshold"]);
    const double emulated = a["modules"][i]["emulated_rel_l2"];
    const double floor = a["thresholds"]["floor"];
    if (4 * emulated > floor) {  // above the floor, twice the margin is twice the threshold
      EXPECT_DOUBLE_EQ(c["modules"][i]["threshold"].get<double>(),
                       2 * a["modules"][i]["threshold"].get<double>());
    }
  }
}

TEST(LocalizeCli, PassBisectionNamesTheFusionThatBreaksTheModel) {
  // The test profile fuses pointwise operators, and its fused add + layer_norm kernel returns
  // NaN: with the first N fusions only, the first N that fails ends with that fusion.
  const Result result =
      stickler({"localize", zooPath("vit-tiny.pt"), "--profile",
                testing::testProfile("layernorm-after-add.json"), "--passes", "--json"});
  ASSERT_EQ(result.status, 0) << result.err;
  const json report = json::parse(result.out);
  ASSERT_EQ(report["status"], "pass_localized") << report.dump(2);
  EXPECT_EQ(report["pass_culprit"]["pass"], "fusion");
  EXPECT_EQ(report["pass_culprit"]["op"], "aten::layer_norm");
  EXPECT_GT(report["pass_applications"].get<int64_t>(), 1);
  EXPECT_LE(report["device_runs"].get<int64_t>(), report["device_run_target"].get<int64_t>());
  // The run without any pass application passes: that is what makes the fusion the cause.
  EXPECT_EQ(report["runs"][2]["verdict"], "pass") << report["runs"].dump(2);
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
  // The next step, named as both front-ends call it (the tools layer adds it, from the table).
  EXPECT_NE(report["summary"].get<std::string>().find(
                "localization needs a model that compiles; see check_support (`stickler check`) "
                "and adapt_model (`stickler adapt`)"),
            std::string::npos)
      << report["summary"];
}

}  // namespace
}  // namespace stickler
