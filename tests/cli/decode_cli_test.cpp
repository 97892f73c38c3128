// `stickler run --decode N` as a user runs it: a decoder's prefill and greedy steps through its
// card's decode interface, judged per step (docs/run-json.md "Decoding").
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::Result;
using testing::stickler;
using testing::zooPath;

json decodeReport(const std::string& model, const std::string& profile, int expected_status) {
  const Result r = stickler(
      {"run", zooPath(model), "--backend", "spyre-sim:" + profile, "--decode", "4", "--json"});
  EXPECT_EQ(r.status, expected_status) << r.out << r.err;
  EXPECT_EQ(r.out.find('{'), 0u) << r.err;
  return json::parse(r.out);
}

TEST(DecodeCli, AZooDecoderDecodesFourStepsOnSpyre2026) {
  const json report = decodeReport("qwen2-hd128.pt", "spyre-2026", 0);
  EXPECT_EQ(report.at("verdict"), "pass");
  const json& decode = report.at("decode");
  EXPECT_EQ(decode.at("prompt_length"), 64);  // 16 tokens left-padded to a multiple of 64
  EXPECT_EQ(decode.at("prompt_tokens"), 16);
  EXPECT_EQ(decode.at("max_length"), 128);
  ASSERT_EQ(decode.at("per_step").size(), 5u);  // the prefill's last position, then 4 steps
  for (size_t i = 0; i < 5; ++i) {
    const json& step = decode["per_step"][i];
    EXPECT_EQ(step.at("step"), i);
    EXPECT_EQ(step.at("slot"), 63 + i);  // each step's token in the slot after the last
    EXPECT_TRUE(step.at("token_agrees").get<bool>()) << step.dump(1);
    EXPECT_EQ(step.at("verdict"), "pass");
    ASSERT_EQ(step.at("key_cosine").size(), 1u);  // one layer
    EXPECT_GT(step["key_cosine"][0].get<double>(), 0.999);
    EXPECT_GT(step["value_cosine"][0].get<double>(), 0.999);
  }
  EXPECT_TRUE(decode.at("first_failing_step").is_null());
  // The steps feed the reference's tokens: the same tokens on the CPU, exactly.
  const Result cpu =
      stickler({"run", zooPath("qwen2-hd128.pt"), "--backend", "cpu", "--decode", "4", "--json"});
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  const json on_cpu = json::parse(cpu.out).at("decode").at("per_step");
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(on_cpu[i].at("reference_token"), decode["per_step"][i].at("reference_token"));
    EXPECT_EQ(on_cpu[i].at("device_token"), on_cpu[i].at("reference_token"));
  }
}

// rmsnorm-variance-fp16 on a decoder whose prompt is ordinary but whose first decoded token
// carries massive activations: one forward pass passes, decoding fails from step 1 on, and the
// same decode passes on the profile without the fault.
TEST(DecodeCli, AnRmsNormInFp16PassesThePrefillAndFailsTheDecode) {
  const std::string model = "qwen2-massive-token.pt";
  EXPECT_EQ(stickler({"run", zooPath(model), "--backend", "spyre-sim:spyre-2026"}).status, 0);
  const json faulty = decodeReport(model, "spyre-2026", 1);
  EXPECT_EQ(faulty.at("verdict"), "fail");
  const json& decode = faulty.at("decode");
  EXPECT_EQ(decode.at("first_failing_step"), 1);
  EXPECT_EQ(decode["per_step"][0].at("verdict"), "pass");
  EXPECT_EQ(decode["per_step"][1].at("verdict"), "fail");
  EXPECT_FALSE(decode["per_step"][1].at("token_agrees").get<bool>());
  // The cache drifts below the 0.99 the Neuron accuracy debugger asks of it.
  EXPECT_LT(decode.at("min_kv_cosine").get<double>(), 0.99);

  const json clean = decodeReport(model, "spyre-2026-clean", 0);
  EXPECT_EQ(clean.at("verdict"), "pass");
  EXPECT_GT(clean.at("decode").at("min_kv_cosine").get<double>(), 0.999);

  const Result text =
      stickler({"run", zooPath(model), "--backend", "spyre-sim:spyre-2026", "--decode", "2"});
  EXPECT_NE(text.out.find("The first failing step is 1."), std::string::npos) << text.out;
}

TEST(DecodeCli, RefusesWhatItCannotDecode) {
  const Result encoder = stickler({"run", zooPath("bert-tiny.pt"), "--decode", "4"});
  EXPECT_EQ(encoder.status, 2);
  EXPECT_NE(encoder.err.find("its model card has no decode interface"), std::string::npos)
      << encoder.err;
  const Result too_many = stickler({"run", zooPath("qwen2-hd128.pt"), "--decode", "65"});
  EXPECT_EQ(too_many.status, 2);
  EXPECT_NE(too_many.err.find("the cache has 128 slots and the prompt fills 64, leaving 64 steps"),
            std::string::npos)
      << too_many.err;
  const Result with_inputs = stickler(
      {"run", zooPath("qwen2-hd128.pt"), "--decode", "1", "--input", "input_ids:1x16:int64"});
  EXPECT_EQ(with_inputs.status, 2);
  EXPECT_NE(with_inputs.err.find("--input does not apply"), std::string::npos) << with_inputs.err;
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// The first step that fails, then the module within it, bisected on the reference's cache for
// the steps before it.
TEST(DecodeCli, LocalizeNamesTheStepAndTheNorm) {
  const testing::Result r =
      testing::stickler({"localize", testing::zooPath("qwen2-massive-token.pt"), "--profile",
                         "spyre-2026", "--decode", "4", "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("status"), "localized") << r.out;
  const nlohmann::json& decode = report.at("decode");
  EXPECT_EQ(decode.at("localized_step"), 1);
  EXPECT_EQ(decode.at("graph"), "decode_step");
  EXPECT_EQ(decode.at("cache"), "reference");
  EXPECT_EQ(decode.at("verdict"), "fail");
  EXPECT_EQ(report.at("culprit").at("module_class"), "Qwen2RMSNorm") << report["culprit"].dump(1);

  // The text, and the HTML page: each step's figures as a chart, the localized step outlined.
  const std::string html = testing::uniqueTempPath("decode-localize") + ".html";
  const testing::Result text =
      testing::stickler({"localize", testing::zooPath("qwen2-massive-token.pt"), "--profile",
                         "spyre-2026", "--decode", "2", "--html", html});
  EXPECT_NE(text.out.find("step 1 is the first that fails"), std::string::npos) << text.out;
  std::ifstream in(html);
  std::stringstream page;
  page << in.rdbuf();
  const std::string svg =
      page.str().substr(std::min(page.str().size(), page.str().find("<svg id=\"decode-chart\"")));
  ASSERT_FALSE(svg.empty()) << page.str().substr(0, 2000);
  EXPECT_NE(svg.find("data-step=\"0\" data-verdict=\"pass\""), std::string::npos);
  const size_t failing = svg.find("data-step=\"1\" data-verdict=\"fail\"");
  ASSERT_NE(failing, std::string::npos) << svg.substr(0, 3000);
  // Outlined within its own group, not another step's.
  EXPECT_LT(svg.find("step-marked", failing), svg.find("</g>", failing));
  EXPECT_NE(svg.find("data-step=\"2\""), std::string::npos);
}

// diagnose --mode numerics over decode: one step's graph compared module by module on the
// inputs the reference fed it: the first failing step, or the step asked for.
TEST(DecodeCli, NumericsComparesTheFirstFailingStepOrTheOneAsked) {
  const auto numerics = [](std::vector<std::string> extra, int status) {
    std::vector<std::string> args = {"diagnose",  zooPath("qwen2-massive-token.pt"),
                                     "--profile", "spyre-2026",
                                     "--mode",    "numerics",
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = stickler(args);
    EXPECT_EQ(r.status, status) << r.out << r.err;
    return json::parse(r.out);
  };
  const auto over = [](const json& report) {
    std::set<std::string> modules;
    for (const json& entry : report.at("numerics").at("modules")) {
      if (entry.value("over_threshold", false))
        modules.insert(entry.at("module").get<std::string>());
    }
    return modules;
  };
  const json failing = numerics({"--decode", "2"}, 1);
  EXPECT_EQ(failing.at("decode").at("localized_step"), 1);
  EXPECT_EQ(failing.at("decode").at("graph"), "decode_step");
  EXPECT_EQ(failing.at("decode").at("first_failing_step"), 1);
  EXPECT_TRUE(over(failing).count("model.norm")) << failing.at("numerics").dump().substr(0, 2000);

  const json prefill = numerics({"--decode", "2", "--decode-step", "0"}, 0);
  EXPECT_EQ(prefill.at("decode").at("localized_step"), 0);
  EXPECT_EQ(prefill.at("decode").at("graph"), "prefill");
  EXPECT_FALSE(over(prefill).count("model.norm"));

  const Result text =
      stickler({"diagnose", zooPath("qwen2-massive-token.pt"), "--profile", "spyre-2026", "--mode",
                "numerics", "--decode", "2", "--decode-step", "2"});
  EXPECT_NE(text.out.find("step 2 (the first that fails is 1), compared below"), std::string::npos)
      << text.out;

  const auto refused = [](std::vector<std::string> extra, const std::string& message) {
    std::vector<std::string> args = {"diagnose", zooPath("qwen2-massive-token.pt"), "--profile",
                                     "spyre-2026"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = stickler(args);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  refused({"--decode", "2"}, "it takes mode numerics");
  refused({"--mode", "numerics", "--decode-step", "1"}, "give decode (the steps) too");
  refused({"--mode", "numerics", "--decode", "2", "--decode-step", "3"},
          "a decode of 2 steps has steps 0 (the prefill) to 2");
}

TEST(DecodeCli, LocalizeOverADecodeThatPassesSaysSo) {
  const testing::Result r =
      testing::stickler({"localize", testing::zooPath("qwen2-hd128.pt"), "--profile", "spyre-2026",
                         "--decode", "2", "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("status"), "passes");
  EXPECT_TRUE(report.at("decode").at("localized_step").is_null());
  EXPECT_EQ(report.at("decode").at("graph"), "prefill");
  const testing::Result both =
      testing::stickler({"localize", testing::zooPath("qwen2-hd128.pt"), "--profile", "spyre-2026",
                         "--decode", "2", "--adapt"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("localize with adapt or with decode, not both"), std::string::npos)
      << both.err;
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// adapt --decode: the forward's adapters go to the decode graphs too, each checked. Heads of 64
// are padded to 128 in both graphs while their caches keep 64 (the graphs' inputs and
// outputs); the rotary tables the forward folded from constant positions have nothing to fold
// in graphs that read their positions from the mask, and are listed as refused there.
TEST(DecodeCli, AdaptAppliesTheForwardsAdaptersToTheDecodeGraphsThenDecodes) {
  const testing::Result r =
      testing::stickler({"adapt", testing::zooPath("llama-hd64.pt"), "--profile", "spyre-2026",
                         "--decode", "4", "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("verdict"), "pass");
  EXPECT_EQ(report.at("forward_verdict"), "pass");
  std::set<std::string> forward;
  for (const auto& application : report.at("adapters").at("applied")) {
    forward.insert(application.at("adapter").get<std::string>());
  }
  ASSERT_TRUE(forward.count("pad-attention-heads")) << report["adapters"].dump(1);
  ASSERT_TRUE(forward.count("precompute-rotary-tables")) << report["adapters"].dump(1);
  const nlohmann::json& decode = report.at("decode");
  ASSERT_EQ(decode.at("per_step").size(), 5u);
  EXPECT_TRUE(decode.at("passed").get<bool>());
  EXPECT_GT(decode.at("min_kv_cosine").get<double>(), 0.999);
  std::set<std::string> refused_on;
  for (const auto& refusal : decode.at("adapters").at("refused")) {
    EXPECT_EQ(refusal.at("adapter"), "precompute-rotary-tables") << refusal.dump();
    refused_on.insert(refusal.at("graph").get<std::string>());
    EXPECT_NE(refusal.at("reason").get<std::string>().find("changed nothing in this graph"),
              std::string::npos);
  }
  EXPECT_EQ(refused_on, (std::set<std::string>{"prefill", "decode_step"}));
  // Every other adapter the forward took went to both graphs.
  for (const char* graph : {"prefill", "decode_step"}) {
    std::set<std::string> took;
    for (const auto& name : decode.at("adapters").at(graph)) took.insert(name.get<std::string>());
    for (const std::string& name : forward) {
      if (name != "precompute-rotary-tables") {
        EXPECT_TRUE(took.count(name)) << graph << " " << name;
      }
    }
  }
  // The caches keep the model's own head_dim: [layers, batch, kv_heads, slots, 64].
  const nlohmann::json& outputs = report.at("comparison").at("outputs");
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs[1].at("shape"), (nlohmann::json{1, 1, 2, 128, 64}));
}

// Heads that do not fill sticks on their own decode after adapting on spyre-2026: Llama's heads
// of 32 under RoPE, Phi's partial rotary (16 + 16 rotated, 32 passed through) and Granite's heads
// of 80 with its hidden size padded too. Each cache keeps the model's head_dim; what is written
// there is the padded head's real values, sliced out run by run from stick boundaries.
TEST(DecodeCli, PaddedHeadsDecodeWithTheCacheInTheModelsHeadSize) {
  for (const auto& [name, head_dim] :
       {std::pair<const char*, int>{"llama-tiny", 32},
        {"phi-tiny", 64},
        {"granite-hd80", 80},
        // One head as wide as the hidden size: repeat_kv hands the cache back from a branch, and
        // pad-hidden-size leaves the per-layer cache lists alone.
        {"mixtral-h96", 96},
        // No RoPE: three heads of 32 with OPT's learned positions, its hidden size padded too.
        {"opt-h96", 32},
        // A fused query_key_value viewed per head under partial rotary: keys and values both
        // sit in the padded segments.
        {"pythia-tiny", 64}}) {
    SCOPED_TRACE(name);
    const testing::Result r =
        testing::stickler({"adapt", testing::zooPath(std::string(name) + ".pt"), "--profile",
                           "spyre-2026", "--decode", "2", "--json"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const nlohmann::json report = nlohmann::json::parse(r.out);
    EXPECT_EQ(report.at("verdict"), "pass");
    EXPECT_TRUE(report.at("decode").at("passed").get<bool>());
    EXPECT_GT(report.at("decode").at("min_kv_cosine").get<double>(), 0.999);
    const nlohmann::json& outputs = report.at("comparison").at("outputs");
    ASSERT_EQ(outputs.size(), 3u);
    EXPECT_EQ(outputs[1].at("shape").back(), head_dim);
  }
}

TEST(DecodeCli, AdaptRefusesToDecodeAnEncoder) {
  const testing::Result r = testing::stickler(
      {"adapt", testing::zooPath("bert-tiny.pt"), "--profile", "spyre-2026", "--decode", "4"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("its model card has no decode interface"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// GPT-2 decodes through the same interface: its fused projection's split heads written into
// the static cache. gpt2-tiny's heads fill sticks as they are.
TEST(DecodeCli, Gpt2DecodesFourStepsAfterAdapt) {
  const Result r = stickler(
      {"adapt", zooPath("gpt2-tiny.pt"), "--profile", "spyre-2026", "--decode", "4", "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report.at("verdict"), "pass");
  EXPECT_EQ(report.at("decode").at("per_step").size(), 5u);
  EXPECT_GT(report.at("decode").at("min_kv_cosine").get<double>(), 0.999);
  // The prefill's logits are judged at the prompt's 16 tokens, not at its left padding.
  const json& logits = report.at("comparison").at("outputs").at(0);
  EXPECT_EQ(logits.at("kind"), "logits");
  EXPECT_EQ(logits.at("shape").at(1), report.at("decode").at("prompt_tokens"));
  EXPECT_LT(logits.at("shape").at(1).get<int64_t>(),
            report.at("decode").at("prompt_length").get<int64_t>());
}

// gpt2-h80's one head of 80 is padded to 128 in the fused projection of every graph, each
// checked equivalent, while its caches keep 80 ([layers, batch, heads, slots, 80]): what the
// cache stores is the padded head sliced back to 80 (a slice from a stick boundary, no selection
// matmul whose 80 outputs would not fill sticks). Its head is as wide as its hidden size, which
// pad-hidden-size pads to 128 after the heads: the cache's sizes look like the hidden size, but
// the cache (what the step reads back, the empty one the prefill builds) keeps 80.
// gpt2-h160's two heads of 80 fill sticks together at 96 each in the forward; in the decode
// graphs each head is padded to 128, since the cache is read back one head at a time.
TEST(DecodeCli, AFusedProjectionsPaddedHeadsKeepTheCacheInTheModelsHeadSize) {
  for (const char* model : {"gpt2-h80", "gpt2-h160"}) {
    SCOPED_TRACE(model);
    const Result r = stickler({"adapt", zooPath(std::string(model) + ".pt"), "--profile",
                               "spyre-2026", "--decode", "4", "--json"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const json report = json::parse(r.out);
    EXPECT_EQ(report.at("verdict"), "pass");
    const json& decode = report.at("decode");
    for (const char* graph : {"prefill", "decode_step"}) {
      std::set<std::string> took;
      for (const auto& name : decode.at("adapters").at(graph)) {
        took.insert(name.get<std::string>());
      }
      EXPECT_TRUE(took.count("pad-attention-heads")) << graph << decode.at("adapters").dump();
      EXPECT_TRUE(took.count("pad-hidden-size")) << graph << decode.at("adapters").dump();
    }
    EXPECT_EQ(decode.at("per_step").size(), 5u);
    EXPECT_GT(decode.at("min_kv_cosine").get<double>(), 0.999);
    const json& outputs = report.at("comparison").at("outputs");
    ASSERT_EQ(outputs.size(), 3u);
    EXPECT_EQ(outputs[1].at("shape").back(), 80);
  }
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// A scripted decoder decodes through the same interface: Mixtral's prefill and decode_step are
// exported methods beside its forward, its routing still a loop with a branch per expert.
TEST(DecodeCli, AScriptedMixtureOfExpertsDecodes) {
  const Result r = stickler({"run", zooPath("mixtral-tiny.pt"), "--backend", "cpu-emulated:dl16",
                             "--decode", "4", "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report.at("verdict"), "pass");
  const json& decode = report.at("decode");
  EXPECT_EQ(decode.at("methods").at("step"), "decode_step");
  ASSERT_EQ(decode.at("per_step").size(), 5u);
  EXPECT_EQ(decode.at("per_step")[0].at("key_cosine").size(), 2u);  // one per layer
  EXPECT_GT(decode.at("min_kv_cosine").get<double>(), 0.999);

  // Adapted, its heads of 32 are padded in both decode graphs (the key's cache write told from
  // the value's through the scripted helper's returned tuple), each checked; the cache keeps 32,
  // written as the padded head sliced back, and the decode passes.
  const Result adapted = stickler({"adapt", zooPath("mixtral-tiny.pt"), "--profile",
                                   "spyre-2026-clean", "--decode", "4", "--json"});
  ASSERT_EQ(adapted.status, 0) << adapted.out << adapted.err;
  const json adapt = json::parse(adapted.out);
  EXPECT_EQ(adapt.at("forward_verdict"), "pass");
  EXPECT_EQ(adapt.at("verdict"), "pass");
  for (const char* graph : {"prefill", "decode_step"}) {
    std::set<std::string> took;
    for (const auto& name : adapt.at("decode").at("adapters").at(graph)) {
      took.insert(name.get<std::string>());
    }
    EXPECT_TRUE(took.count("pad-attention-heads")) << graph << adapt["decode"]["adapters"].dump();
  }
  EXPECT_EQ(adapt.at("decode").at("per_step").size(), 5u);
  EXPECT_GT(adapt.at("decode").at("min_kv_cosine").get<double>(), 0.999);
}

}  // namespace
}  // namespace stickler
