// `stickler adapt` on the zoo: every model fails end to end on spyre-2025-clean before adapting
// (or passes, where the profile has no gap for it) and passes after, on spyre-2025-clean and on
// spyre-2026 (Bamba aside there), each adapter and the whole stack judged equivalent; the adapted
// archive runs with `stickler run`. The README's test command runs these again on the reference
// BLAS.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using testing::Result;
using testing::stickler;
using testing::sticklerIn;
using testing::zooPath;

struct FamilyCase {
  const char* model;
  bool gap_before;  // whether the profile has a gap for it before adapting
};

class AdaptFamily : public ::testing::TestWithParam<std::tuple<FamilyCase, const char*>> {};

// On spyre-2025-clean each model is also run before adapting (the gap is there, or not); on
// spyre-2026, whose faults add gaps (top-k over a partial stick aborts), the catalog alone must
// bring every model up as well.
TEST_P(AdaptFamily, FailsBeforeAndPassesAfter) {
  const auto [family, profile] = GetParam();
  const std::string model = zooPath(std::string(family.model) + ".pt");
  if (std::string(profile) == "spyre-2025-clean") {
    const Result before = stickler({"run", model, "--backend", "spyre-sim:spyre-2025-clean"});
    if (family.gap_before) {
      EXPECT_NE(before.status, 0) << before.out;
    } else {
      EXPECT_EQ(before.status, 0) << before.out;
    }
  }
  const Result after = stickler({"adapt", model, "--profile", profile, "--json"});
  ASSERT_EQ(after.status, 0) << after.out << after.err;
  const auto report = nlohmann::json::parse(after.out);
  EXPECT_EQ(report["verdict"], "pass");
  if (std::string(profile) == "spyre-2025-clean") {
    EXPECT_EQ(report["adapters"]["applied"].empty(), !family.gap_before);
  }
  EXPECT_TRUE(report["adapters"]["refused"].empty()) << report["adapters"]["refused"].dump(1);
  // Each adapter passed its own check, and the stack passed once as a whole.
  for (const auto& application : report["adapters"]["applied"]) {
    EXPECT_TRUE(application["equivalence"]["accepted"].get<bool>()) << application.dump(1);
  }
  if (!report["adapters"]["applied"].empty()) {
    EXPECT_EQ(report["adapters"]["whole_model"]["verdict"], "equivalent") << report["adapters"];
  }
}

// Checkpoints are served in bfloat16 and float16 (build/zoo-bfloat16 and build/zoo-float16, traced
// in that dtype): the catalog adapts them as it adapts the float32 model, each adapter with its
// equivalence check, whose float64 truth widens the 16-bit weights as it widens float32 ones, and
// whose float32 run computes from the 16-bit weights (LibTorch 1.13 has no float16 CPU kernels
// for layer_norm or addmm: without that, no float16 model would even load) (issue 29).
// Both 16-bit dtypes in one test, which adapts the float32 model once for them.
class AdaptSixteenBit : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

// The zoo's 16-bit models (STICKLER_ZOO_16BIT_MODELS in CMakeLists.txt): among them, every
// shipped adapter has a model to apply to.
constexpr std::array<const char*, 11> kSixteenBitModels = {
    "llama-tiny", "gpt2-tiny", "gpt2-h80",    "qwen2-hd128",     "vit-tiny",    "bamba-tiny",
    "bert-h96",   "phi-tiny",  "bert-ffn200", "t5-encoder-tiny", "mixtral-tiny"};

TEST_P(AdaptSixteenBit, TheSameAdaptersApplyWithTheirCheck) {
  const auto [name, profile] = GetParam();
  auto adapted = [profile = profile](const std::string& model) {
    const Result result = stickler({"adapt", model, "--profile", profile, "--json"});
    EXPECT_TRUE(result.err.empty() || result.out.find('{') == 0) << result.err;
    return nlohmann::json::parse(result.out);
  };
  auto names = [](const nlohmann::json& report) {
    std::set<std::string> applied;
    for (const auto& application : report["adapters"]["applied"]) {
      applied.insert(application["adapter"].get<std::string>());
    }
    return applied;
  };
  const auto wide = adapted(zooPath(std::string(name) + ".pt"));
  for (const std::string dtype : {"bfloat16", "float16"}) {
    SCOPED_TRACE(dtype);
    const std::string archive = zooPath("../zoo-" + dtype + "/" + name + ".pt");
    const Result inspected = stickler({"inspect", archive, "--json"});
    ASSERT_EQ(inspected.status, 0) << inspected.err;
    EXPECT_EQ(nlohmann::json::parse(inspected.out)["card"]["config"]["torch_dtype"], dtype);
    const auto narrow = adapted(archive);
    auto expected = names(wide);
    // An attention mask filled with float16's lowest value (-65504) is within DL16's range
    // already: there is no fill to move.
    if (dtype == "float16") expected.erase("mask-fill-in-device-range");
    EXPECT_EQ(names(narrow), expected);
    EXPECT_TRUE(narrow["adapters"]["refused"].empty()) << narrow["adapters"]["refused"].dump(1);
    for (const auto& application : narrow["adapters"]["applied"]) {
      EXPECT_TRUE(application["equivalence"]["accepted"].get<bool>()) << application.dump(1);
    }
    EXPECT_EQ(narrow["verdict"], wide["verdict"]);
  }
}

// A 16-bit model runs each operator in float32 from widened copies of its inputs; the copies
// keep the inputs' memory order, so the device sees the layouts the float32 model has: T5's
// permuted position bias is sticked on its heads in every dtype.
TEST(AdaptSixteenBitCatalog, SixteenBitModelsKeepTheirLayouts) {
  auto rules = [](const std::string& archive) {
    const Result checked = stickler({"check", archive, "--profile", "spyre-2026", "--json"});
    EXPECT_EQ(checked.err, "");
    std::multiset<std::string> found;
    const auto report = nlohmann::json::parse(checked.out);
    for (const auto& blocker : report["lowering"]["blockers"]) {
      found.insert(blocker["rule"].get<std::string>() + " in " +
                   blocker["module"].get<std::string>());
    }
    return found;
  };
  const auto wide = rules(zooPath("t5-encoder-tiny.pt"));
  ASSERT_EQ(wide.count("stick-mismatch in encoder.block.0.layer.0.SelfAttention"), 1)
      << ::testing::PrintToString(wide);
  for (const std::string dtype : {"bfloat16", "float16"}) {
    EXPECT_EQ(rules(zooPath("../zoo-" + dtype + "/t5-encoder-tiny.pt")), wide) << dtype;
  }
}

// Every adapter the catalog ships applies to some bfloat16 model with its check: a new adapter
// whose rewrite assumes float32 (or whose model has no 16-bit copy in the zoo) fails here. The
// models are adapted for spyre-2025-clean, and llama-tiny for spyre-2026 too: there the RMS
// norms keep the pow(2) that prescale-mean-of-squares rewrites (on the 2025 profiles
// pow-square-as-mul has made it a product first).
TEST(AdaptSixteenBitCatalog, EveryShippedAdapterAppliesToABfloat16Model) {
  // In a directory of its own: no workspace catalog there, only what ships.
  const std::string dir = testing::uniqueTempPath("sixteen-bit-catalog");
  std::filesystem::create_directories(dir);
  const Result listed = sticklerIn(dir, {"adapters", "--json"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  std::set<std::string> shipped;
  const auto catalog = nlohmann::json::parse(listed.out);
  for (const auto& adapter : catalog["adapters"]) {
    if (adapter["status"] == "shipped") shipped.insert(adapter["name"].get<std::string>());
  }
  ASSERT_FALSE(shipped.empty());
  std::vector<std::pair<std::string, std::string>> runs;
  for (const char* name : kSixteenBitModels) runs.emplace_back(name, "spyre-2025-clean");
  runs.emplace_back("llama-tiny", "spyre-2026");
  std::set<std::string> applied;
  for (const auto& [name, profile] : runs) {
    const Result result = sticklerIn(
        dir, {"adapt", zooPath("../zoo-bfloat16/" + name + ".pt"), "--profile", profile, "--json"});
    ASSERT_TRUE(result.out.find('{') == 0) << name << ": " << result.err;
    const auto report = nlohmann::json::parse(result.out);
    for (const auto& application : report["adapters"]["applied"]) {
      EXPECT_TRUE(application["equivalence"]["accepted"].get<bool>()) << application.dump(1);
      applied.insert(application["adapter"].get<std::string>());
    }
  }
  for (const auto& name : shipped) EXPECT_TRUE(applied.count(name)) << name << " applies to none";
}

INSTANTIATE_TEST_SUITE_P(Zoo, AdaptSixteenBit,
                         ::testing::Combine(::testing::ValuesIn(kSixteenBitModels),
                                            ::testing::Values("spyre-2026", "spyre-2025-clean")),
                         [](const auto& info) {
                           return testing::testName(std::get<0>(info.param)) + "_" +
                                  testing::testName(std::get<1>(info.param));
                         });

const FamilyCase kEveryZooModel[] = {{"bamba-3layer", true},
                                     {"bamba-tiny", true},
                                     {"bert-ffn200", true},
                                     {"bert-h96", true},
                                     {"bert-hd64-outliers", true},
                                     {"bert-tiny", true},
                                     {"cohere-tiny", true},
                                     {"convnext-h96", true},
                                     {"convnext-permuted-norm", false},
                                     {"convnext-tiny", true},
                                     {"esm2-tiny", true},
                                     {"falcon-h192", true},
                                     {"falcon-tiny", true},
                                     {"gpt2-h160", true},
                                     {"gpt2-h80", true},
                                     {"gpt2-odd-vocab", true},
                                     {"gpt2-tiny", true},
                                     {"gptj-rd128", true},
                                     {"gptj-tiny", true},
                                     {"granite-hd80", true},
                                     {"llama-4layer-outliers", true},
                                     {"llama-ffn352", true},
                                     {"llama-hd64", true},
                                     {"llama-tiny", true},
                                     {"mixtral-h96", true},
                                     {"mixtral-tiny", true},
                                     {"mpnet-h96", true},
                                     {"mpnet-hd64", true},
                                     {"mpnet-tiny", true},
                                     {"opt-h96", true},
                                     {"opt-tiny", true},
                                     {"phi-hd80", true},
                                     {"phi-tiny", true},
                                     {"phi3-tiny", true},
                                     {"phi4-mini-tiny", true},
                                     {"pythia-tiny", true},
                                     {"qwen2-hd128", true},
                                     {"qwen2-massive-token", true},
                                     {"t5-encoder-dkv64", true},
                                     {"t5-encoder-hd96-ff200", true},
                                     {"t5-encoder-tiny", true},
                                     {"vit-h96", true},
                                     {"vit-tiny", false},
                                     {"xlm-roberta-h192", true},
                                     {"xlm-roberta-tiny", true}};

INSTANTIATE_TEST_SUITE_P(Zoo, AdaptFamily,
                         ::testing::Combine(::testing::ValuesIn(kEveryZooModel),
                                            ::testing::Values("spyre-2025-clean", "spyre-2026")),
                         [](const auto& info) {
                           return testing::testName(std::get<0>(info.param).model) + "_" +
                                  testing::testName(std::get<1>(info.param));
                         });

// Every model of the zoo is brought up (and a model added to the zoo joins the list above).
TEST(AdaptCli, TheFamilyTestCoversTheWholeZoo) {
  for (const std::string& name : testing::zooModelNames()) {
    bool listed = false;
    for (const FamilyCase& family : kEveryZooModel) listed = listed || name == family.model;
    EXPECT_TRUE(listed) << name << " is in the zoo but not in kEveryZooModel";
  }
}

// Interleaved rotary's pairs move apart inside the adapted graphs, not in the caches they
// return: each such decoder decodes on spyre-2026 with the head padding in its prefill and step
// graphs, and its keys agree with the reference's cache slot by slot (a cache returned with its
// pairs apart would not). The keys are written back through a selection matmul whose outputs
// fill sticks and are cut back to the head's size.
TEST(AdaptCli, InterleavedRotaryDecodersKeepTheirCachesInTheModelsLayout) {
  for (const char* name : {"gptj-tiny", "gptj-rd128", "cohere-tiny"}) {
    SCOPED_TRACE(name);
    const Result result = stickler({"adapt", zooPath(std::string(name) + ".pt"), "--profile",
                                    "spyre-2026", "--decode", "4", "--json"});
    ASSERT_EQ(result.status, 0) << result.out << result.err;
    const auto report = nlohmann::json::parse(result.out);
    EXPECT_EQ(report["verdict"], "pass");
    const auto& decode = report["decode"];
    for (const char* graph : {"prefill", "decode_step"}) {
      const auto& took = decode["adapters"][graph];
      EXPECT_NE(std::find(took.begin(), took.end(), "pad-attention-heads"), took.end()) << graph;
      // gptj-tiny's one head is as wide as its hidden size of 80, padded too: the matrices that
      // move the cache's keys keep the head's own size.
      if (std::string(name) == "gptj-tiny") {
        EXPECT_NE(std::find(took.begin(), took.end(), "pad-hidden-size"), took.end()) << graph;
      }
    }
    ASSERT_EQ(decode["per_step"].size(), 5u);
    for (const auto& step : decode["per_step"]) {
      for (const auto& cosine : step["key_cosine"]) EXPECT_GT(cosine.get<double>(), 0.999);
    }
  }
}

TEST(AdaptCli, SavesAnArchiveThatRunPasses) {
  const std::string out = testing::uniqueTempPath("t5-adapted.pt");
  const Result adapt = stickler(
      {"adapt", zooPath("t5-encoder-tiny.pt"), "--profile", "spyre-2025-clean", "--save", out});
  ASSERT_EQ(adapt.status, 0) << adapt.out << adapt.err;
  EXPECT_NE(adapt.out.find("restickify-mixed-operands"), std::string::npos) << adapt.out;
  const Result run = stickler({"run", out, "--backend", "spyre-sim:spyre-2025-clean"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  std::remove(out.c_str());
}

// A decoder adapted with --decode and saved decodes on the device as it did in memory: the
// archive's own prefill would not compile there (its heads of 64 are not padded). Saved without
// --decode, its card offers no decode interface, and the report says why.
TEST(AdaptCli, ADecoderSavedWithItsDecodeGraphsDecodesOnTheDevice) {
  const std::string out = testing::uniqueTempPath("llama-hd64-adapted.pt");
  const Result adapt = stickler({"adapt", zooPath("llama-hd64.pt"), "--profile", "spyre-2026",
                                 "--decode", "2", "--save", out, "--json"});
  ASSERT_EQ(adapt.status, 0) << adapt.out << adapt.err;
  const auto report = nlohmann::json::parse(adapt.out);
  EXPECT_EQ(report["saved_decode"], true) << adapt.out;
  EXPECT_FALSE(report.contains("saved_without_decode"));
  const Result original = stickler(
      {"run", zooPath("llama-hd64.pt"), "--backend", "spyre-sim:spyre-2026", "--decode", "2"});
  EXPECT_NE(original.status, 0) << original.out;
  EXPECT_NE(original.out.find("the prefill graph does not compile"), std::string::npos)
      << original.out;
  const Result decoded =
      stickler({"run", out, "--backend", "spyre-sim:spyre-2026", "--decode", "2", "--json"});
  ASSERT_EQ(decoded.status, 0) << decoded.out << decoded.err;
  const auto run = nlohmann::json::parse(decoded.out);
  EXPECT_EQ(run["verdict"], "pass");
  EXPECT_EQ(run["decode"]["per_step"].size(), 3u);
  // inspect says how the archive was made: from which archive, with what, graph by graph.
  const Result original_inspected =
      stickler({"inspect", zooPath("llama-hd64.pt"), "--no-include-nodes", "--json"});
  ASSERT_EQ(original_inspected.status, 0) << original_inspected.err;
  const auto original_report = nlohmann::json::parse(original_inspected.out);
  EXPECT_FALSE(original_report.contains("adapted"));
  const Result inspected = stickler({"inspect", out, "--no-include-nodes", "--json"});
  ASSERT_EQ(inspected.status, 0) << inspected.err;
  const auto adapted = nlohmann::json::parse(inspected.out).value("adapted", nlohmann::json());
  EXPECT_EQ(adapted.value("from_sha256", ""), original_report["model"]["sha256"]) << adapted;
  EXPECT_EQ(adapted["adapters"], report["adapters"]["stack"]) << adapted;
  for (const char* graph : {"prefill", "decode_step"}) {
    EXPECT_EQ(adapted["decode"][graph], report["decode"]["adapters"][graph]) << graph;
  }

  const Result forward_only =
      stickler({"adapt", zooPath("llama-hd64.pt"), "--profile", "spyre-2026", "--save", out});
  ASSERT_EQ(forward_only.status, 0) << forward_only.out << forward_only.err;
  EXPECT_NE(forward_only.out.find("without its decode interface (its prefill and step graphs "
                                  "were not adapted"),
            std::string::npos)
      << forward_only.out;
  EXPECT_NE(forward_only.out.find("not judged through decode: its card has a decode interface"),
            std::string::npos)
      << forward_only.out;
  EXPECT_FALSE(report.contains("not_decoded"));  // the call with decode judged it
  const Result no_decode =
      stickler({"run", out, "--backend", "spyre-sim:spyre-2026", "--decode", "2"});
  EXPECT_EQ(no_decode.status, 2);
  EXPECT_NE(no_decode.err.find("its model card has no decode interface"), std::string::npos)
      << no_decode.err;
  // One adapter applied and saved: the forward only, and the report says so.
  const Result applied = stickler({"apply", zooPath("llama-hd64.pt"), "pad-attention-heads",
                                   "--profile", "spyre-2026", "--save", out, "--json"});
  ASSERT_EQ(applied.status, 0) << applied.out << applied.err;
  EXPECT_EQ(nlohmann::json::parse(applied.out).value("saved_decode", true), false) << applied.out;
  EXPECT_NE(nlohmann::json::parse(applied.out)
                .value("saved_without_decode", "")
                .find("its prefill and step graphs were not adapted"),
            std::string::npos)
      << applied.out;
  std::remove(out.c_str());
}

TEST(AdaptCli, AnArchiveWithPrecomputedTablesKeepsItsInputShapes) {
  const std::string out = testing::uniqueTempPath("qwen2-adapted.pt");
  const Result adapt = stickler(
      {"adapt", zooPath("qwen2-hd128.pt"), "--profile", "spyre-2025-clean", "--save", out});
  ASSERT_EQ(adapt.status, 0) << adapt.out << adapt.err;
  ASSERT_NE(adapt.out.find("precompute-rotary-tables"), std::string::npos) << adapt.out;
  // The same shapes, restated: the tables fit.
  const Result same =
      stickler({"run", out, "--backend", "spyre-sim:spyre-2025-clean", "--input",
                "input_ids:1x16:int64:tokens=1024", "--input", "attention_mask:1x16:int64"});
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  // Other shapes would read 16 positions' tables for 8 positions: refused, with the reason.
  const Result other = stickler({"run", out, "--backend", "spyre-sim:spyre-2025-clean", "--input",
                                 "input_ids:1x8:int64", "--input", "attention_mask:1x8:int64"});
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("specialized this archive to its inputs' shapes (input_ids [1, 16]"),
            std::string::npos)
      << other.err;
  std::remove(out.c_str());
}

TEST(AdaptCli, ApplyReportsTheChangeAndMatchNamesBlockers) {
  const Result match =
      stickler({"match", zooPath("gpt2-tiny.pt"), "--profile", "spyre-2025-clean"});
  EXPECT_EQ(match.status, 0) << match.err;
  EXPECT_NE(match.out.find("pow-cube-as-mul: clears unsupported-op aten::pow x2"),
            std::string::npos)
      << match.out;
  const Result apply = stickler({"apply", zooPath("gpt2-tiny.pt"), "pow-cube-as-mul", "--profile",
                                 "spyre-2025-clean", "--json"});
  ASSERT_EQ(apply.status, 0) << apply.err;
  const auto report = nlohmann::json::parse(apply.out);
  EXPECT_EQ(report["status"], "applied");
  EXPECT_EQ(report["application"]["change"]["removed"][0]["op"], "aten::pow");
  EXPECT_EQ(report["blockers_left"]["total"], 1);  // lm_head's vocabulary remains
  const Result missing = stickler({"apply", zooPath("gpt2-tiny.pt"), "no-such-adapter"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no adapter named 'no-such-adapter'"), std::string::npos)
      << missing.err;
}

TEST(AdaptCli, StaleAdaptersComeWithTheirProof) {
  const Result r =
      stickler({"adapters", "stale", "--profile", "spyre-2026", "--model", zooPath("gpt2-tiny.pt"),
                zooPath("qwen2-hd128.pt"), zooPath("qwen2-massive-token.pt"), "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& adapter : report["adapters"]) by_name[adapter["name"]] = adapter;
  // spyre-2026 lowers aten::pow: the cube rewrite is scaffolding it no longer needs.
  ASSERT_TRUE(by_name.count("pow-cube-as-mul")) << r.out;
  EXPECT_TRUE(by_name["pow-cube-as-mul"]["stale"].get<bool>());
  EXPECT_EQ(by_name["pow-cube-as-mul"]["proof"][0]["without_it"], "pass");
  // The square rewrite finds no pow(2) left: spyre-2026's own prescale-mean-of-squares, applied
  // first, rewrote every RMS norm's.
  std::set<std::string> untested;
  for (const auto& adapter : report["untested"]) untested.insert(adapter["name"]);
  EXPECT_TRUE(untested.count("pow-square-as-mul")) << report["untested"].dump();
  // GPT-2's vocabulary is still not a whole number of sticks.
  EXPECT_FALSE(by_name["pad-logits-to-sticks"]["stale"].get<bool>());
  EXPECT_EQ(by_name["pad-logits-to-sticks"]["proof"][0]["without_it"], "blocked");
  // The prescaled mean of squares changes no forward's verdict: qwen2-massive-token's decode
  // needs it, and a decoder is judged by its decode.
  ASSERT_TRUE(by_name.count("prescale-mean-of-squares")) << r.out;
  const auto& prescale = by_name["prescale-mean-of-squares"];
  EXPECT_FALSE(prescale["stale"].get<bool>()) << prescale.dump(1);
  std::map<std::string, nlohmann::json> proof_for;
  for (const auto& proof : prescale["proof"]) proof_for[proof["model"]] = proof;
  EXPECT_EQ(proof_for["qwen2-hd128"]["without_it"], "pass");
  EXPECT_EQ(proof_for["qwen2-massive-token"]["without_it"], "fail");
  EXPECT_EQ(proof_for["qwen2-massive-token"]["without_judged_by"], "decode");
  EXPECT_EQ(proof_for["qwen2-massive-token"]["with_all_adapters"], "pass");
  const Result text = stickler({"adapters", "stale", "--profile", "spyre-2026", "--model",
                                zooPath("qwen2-massive-token.pt"), "--decode", "2"});
  EXPECT_NE(text.out.find("qwen2-massive-token: fail at decode without it (pass at decode with)"),
            std::string::npos)
      << text.out;

  const Result older = stickler({"adapters", "stale", "--profile", "spyre-2025-clean", "--model",
                                 zooPath("qwen2-hd128.pt"), "--json"});
  ASSERT_EQ(older.status, 0) << older.err;
  const auto older_report = nlohmann::json::parse(older.out);
  // The 2025 stack lacks sin and cos: the rotary tables stay needed. pow-square-as-mul can go
  // only because prescale-mean-of-squares, which spyre-2025 inherits from spyre-2026, rewrites
  // the norms' pow(2) when it is not there.
  EXPECT_EQ(older_report["stale"], nlohmann::json::array({"pow-square-as-mul"})) << older.out;
  EXPECT_EQ(stickler({"adapters", "stale", "--profile", "spyre-2026"}).status, 2);
}

// An agent's own fp16-variance adapter, drafted under the shipped one's name (a draft shadows the
// shipped adapter): the mean of squares of the input scaled by 2^-4, scaled back by 2^8 (exact:
// powers of two). Unlike the shipped one, its replacement keeps a pow(2).
const char* const kPrescaledMeanOfSquares = R"(name = "prescale-mean-of-squares"
gap = "the variance of outlier channels overflows 16-bit formats"
why = "scaling by powers of two is exact; the mean of squares is unchanged"
models = ["*"]
profiles = ["spyre-2026", "spyre-2026-clean"]
remove_when = "the device accumulates the variance in float32"


def pattern(x: Tensor):
    return x.pow(2).mean(-1, keepdim=True)


def replacement(x: Tensor):
    return (x * 0.0625).pow(2).mean(-1, keepdim=True) * 256.0
)";

TEST(AdaptCli, StaleAdaptersApplyTheProfilesOwnFirstAndSayWhy) {
  // Its own directory: the reference-BLAS run of this test may run beside it.
  const std::string dir = ::testing::TempDir() + "stale-lineage-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(sticklerIn(dir, {"init"}).status, 0);
  const Result drafted = sticklerIn(dir, {"draft", "prescale-mean-of-squares", "--source",
                                          kPrescaledMeanOfSquares, "--reason", "fp16 variance"});
  ASSERT_EQ(drafted.status, 0) << drafted.err;
  const Result r = sticklerIn(dir, {"adapters", "stale", "--profile", "spyre-2026", "--model",
                                    zooPath("qwen2-hd128.pt"), "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& adapter : report["adapters"]) by_name[adapter["name"]] = adapter;
  // pow-square-as-mul (spyre-2025 only) sorts first but goes after spyre-2026's own adapters:
  // the prescaled mean of squares still finds the pow(2) it matches.
  ASSERT_TRUE(by_name.count("prescale-mean-of-squares")) << r.out;
  const auto& prescaled = by_name["prescale-mean-of-squares"];
  EXPECT_TRUE(prescaled["listed_for_profile"].get<bool>());
  EXPECT_NE(prescaled["why"].get<std::string>().find("listed for spyre-2026: applied first"),
            std::string::npos)
      << prescaled.dump();
  ASSERT_FALSE(prescaled["proof"].empty());
  // pow-square-as-mul is still tried (on the pow(2) the replacement keeps), and says why it
  // comes after.
  ASSERT_TRUE(by_name.count("pow-square-as-mul")) << r.out;
  const auto& square = by_name["pow-square-as-mul"];
  EXPECT_FALSE(square["listed_for_profile"].get<bool>());
  EXPECT_NE(square["why"].get<std::string>().find("tried after the profile's own"),
            std::string::npos)
      << square.dump();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// `stickler adapt` in parallel loops: each applies an adapter whose condition runs in a sandbox
// worker while its float64-truth thread works beside it, and gives its device run to a model host.
// Workers are exec'd, never forked from the busy process: none can inherit a lock held by the
// other thread and wait for it, so every run finishes, and passes.
TEST(AdaptCliConcurrency, ParallelLoopsOfAdaptAllFinish) {
  constexpr int kLoops = 3;
  constexpr int kRunsEach = 4;
  std::vector<std::thread> loops;
  std::atomic<int> passed{0};
  std::vector<std::string> failures(kLoops);
  for (int loop = 0; loop < kLoops; ++loop) {
    loops.emplace_back([&, loop] {
      for (int run = 0; run < kRunsEach; ++run) {
        const auto result = testing::stickler({"adapt", testing::zooPath("bert-tiny.pt"),
                                               "--profile", "spyre-2026", "--timeout", "120"});
        if (result.status == 0 &&
            result.out.find("mask-fill-in-device-range") != std::string::npos) {
          ++passed;
        } else {
          failures[loop] = result.out + result.err;
        }
      }
    });
  }
  for (auto& loop : loops) loop.join();
  EXPECT_EQ(passed.load(), kLoops * kRunsEach);
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace stickler
