// `stickler localize` when one module is not the whole story: modules that fail only together
// are narrowed to a minimal set, with the runs that confirm it; --all-causes names every cause
// one after another; --max-runs bounds the search and says what it left undecided; within a
// culprit module, the operator that makes it fail is named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include "simulator/graph/model_card.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/fault_profiles.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::Result;
using testing::scaledModulesProfile;
using testing::stickler;
using testing::zooPath;

json localize(const std::vector<std::string>& args) {
  const Result result = stickler(args);
  EXPECT_EQ(result.status, 0) << result.err;
  return json::parse(result.out);
}

std::vector<std::string> modulesOf(const json& cause) {
  std::vector<std::string> modules;
  for (const auto& module : cause["modules"]) modules.push_back(module["module"]);
  return modules;
}

// The run the report lists under `label`, or null.
json runLabelled(const json& report, const std::string& label) {
  for (const auto& run : report["runs"]) {
    if (run["device"] == label) return run;
  }
  return nullptr;
}

TEST(LocalizeCauses, TwoInteractingFaultsAreNamedAsExactlyThoseTwo) {
  // Both layers' output projections 2.4 times too large: either alone costs the output about
  // 0.0007 of cosine (the bar is 0.001), both together about 0.0013. The two are 13 modules
  // apart in execution order; the answer is the two, not the 13.
  const std::string html = ::testing::TempDir() + "causes-" + std::to_string(::getpid()) + ".html";
  const std::vector<std::string> faulty = {"encoder.layer.0.output.dense",
                                           "encoder.layer.1.output.dense"};
  const json report =
      localize({"localize", zooPath("bert-tiny.pt"), "--profile", scaledModulesProfile(faulty, 2.4),
                "--adapt", "--html", html, "--json"});
  ASSERT_EQ(report["status"], "needs_several") << report.dump(2);
  ASSERT_EQ(report["causes"].size(), 1u) << report["causes"].dump(2);
  const json& cause = report["causes"][0];
  EXPECT_EQ(cause["kind"], "together");
  EXPECT_EQ(modulesOf(cause), faulty);
  std::vector<std::string> together;
  for (const auto& module : report["together"]) together.push_back(module["module"]);
  EXPECT_EQ(together, faulty);
  EXPECT_EQ(report["culprit"]["module"], faulty[1]);  // the one that completes the failure

  // Confirmed by its own runs, each in the report's list: the two fail together, each alone
  // passes, and everything else on the device passes.
  const json& confirmation = cause["confirmation"];
  EXPECT_EQ(confirmation["alone_on_device"], "fail");
  ASSERT_EQ(confirmation["without_each"].size(), 2u);
  for (const auto& without : confirmation["without_each"]) EXPECT_EQ(without["verdict"], "pass");
  EXPECT_EQ(confirmation["everything_else_on_device"], "pass");
  EXPECT_TRUE(confirmation["confirmed"]);
  EXPECT_EQ(runLabelled(report, "only " + faulty[0] + " and " + faulty[1])["verdict"], "fail");
  EXPECT_EQ(runLabelled(report, "only " + faulty[0])["verdict"], "pass");
  EXPECT_EQ(runLabelled(report, "only " + faulty[1])["verdict"], "pass");
  EXPECT_EQ(runLabelled(report, "everything but " + faulty[0] + " and " + faulty[1])["verdict"],
            "pass");
  // The cause's runs are the report's runs after the two determinism runs, all of them.
  EXPECT_EQ(cause["first_run"], 3);
  EXPECT_EQ(cause["first_run"].get<int64_t>() + cause["runs"].get<int64_t>() - 1,
            report["device_runs"].get<int64_t>());
  // The consecutive run from one to the other stays as context.
  EXPECT_EQ(cause["span"]["from"], faulty[0]);
  EXPECT_EQ(cause["span"]["to"], faulty[1]);
  EXPECT_GT(cause["span"]["modules"].get<int64_t>(), 10);
  // Neither member is reported as an absorbed deviation, nor is what carries theirs.
  EXPECT_TRUE(report["absorbed"].empty()) << report["absorbed"].dump(2);
  EXPECT_LE(report["device_runs"].get<int64_t>(), report["budget"]["max_runs"].get<int64_t>());

  std::stringstream page;
  page << std::ifstream(html).rdbuf();
  EXPECT_NE(page.str().find("<section id=\"causes\">"), std::string::npos);
  EXPECT_NE(page.str().find("<tr class=\"cause-row\" data-cause=\"1\"><td class=\"num\">1</td><td>"
                            "<code>encoder.layer.0.output.dense</code> "
                            "<code>encoder.layer.1.output.dense</code>"),
            std::string::npos);
}

TEST(LocalizeCauses, AFusedAddAndLayerNormAreNamedAsExactlyTheTwoModules) {
  // The fused add + layer_norm kernel is faulty: vit-tiny's first layer norm fails only when
  // the embeddings' add runs on the device with it, in one kernel. The dropout between them
  // passes its input through and rides with the embeddings: it is never named.
  const json report = localize({"localize", zooPath("vit-tiny.pt"), "--profile",
                                testing::testProfile("layernorm-after-add.json"), "--json"});
  ASSERT_EQ(report["status"], "needs_several") << report.dump(2);
  EXPECT_EQ(modulesOf(report["causes"][0]),
            (std::vector<std::string>{"embeddings", "encoder.layer.0.layernorm_before"}));
  EXPECT_TRUE(report["causes"][0]["confirmation"]["confirmed"]);
  EXPECT_EQ(report["confirmation"]["alone_on_device"], "pass");  // the layer norm alone
  // Every layer norm after an add fails the same way: the model still fails without these two.
  EXPECT_EQ(report["causes"][0]["confirmation"]["everything_else_on_device"], "fail");
  EXPECT_NE(report["summary"].get<std::string>().find("another cause remains"), std::string::npos);
  EXPECT_EQ(report["causes"][0]["modules"][0]["ops"].count("aten::dropout"), 1u)
      << report["causes"][0]["modules"][0]["ops"].dump();
}

TEST(LocalizeCauses, AllCausesNamesEveryLayer) {
  // The same fault in every one of 4 layers, each enough to fail the model: with
  // --all-causes, each layer is named in turn, confirmed with the ones before it on the CPU.
  for (const std::string glob :
       {"model.layers.*.mlp.down_proj", "model.layers.*.post_attention_layernorm"}) {
    const json report =
        localize({"localize", zooPath("llama-4layer-outliers.pt"), "--profile",
                  scaledModulesProfile({glob}, 3.0), "--adapt", "--all-causes", "--json"});
    ASSERT_EQ(report["status"], "several_causes") << glob << "\n" << report.dump(2);
    EXPECT_TRUE(report["all_causes"]);
    ASSERT_EQ(report["causes"].size(), 4u) << glob;
    for (size_t layer = 0; layer < 4; ++layer) {
      const json& cause = report["causes"][layer];
      std::string expected = glob;
      expected.replace(expected.find('*'), 1, std::to_string(layer));
      EXPECT_EQ(modulesOf(cause), std::vector<std::string>{expected});
      EXPECT_EQ(cause["confirmation"]["alone_on_device"], "fail");
      EXPECT_TRUE(cause["confirmation"]["confirmed"]);
      // Only the last leaves nothing failing behind it.
      EXPECT_EQ(cause["confirmation"]["everything_else_on_device"], layer == 3 ? "pass" : "fail");
    }
    EXPECT_FALSE(report["budget"]["exhausted"]);
    EXPECT_TRUE(report["budget"]["default"]);
    EXPECT_LE(report["device_runs"].get<int64_t>(), report["budget"]["max_runs"].get<int64_t>());
  }
}

TEST(LocalizeCauses, TheRunBudgetIsRespectedAndReported) {
  const std::string module = "transformer.h.0.mlp.c_proj";
  const std::string profile = scaledModulesProfile({module}, 3.0);
  const json report = localize({"localize", zooPath("gpt2-tiny.pt"), "--profile", profile,
                                "--adapt", "--max-runs", "5", "--json"});
  ASSERT_EQ(report["status"], "budget_exhausted") << report.dump(2);
  EXPECT_EQ(report["device_runs"], 5);
  EXPECT_EQ(report["runs"].size(), 5u);
  EXPECT_EQ(report["budget"]["max_runs"], 5);
  EXPECT_FALSE(report["budget"]["default"]);
  EXPECT_TRUE(report["budget"]["exhausted"]);
  EXPECT_TRUE(report["causes"].empty());
  // Three bisection runs narrow 23 modules to a few; the faulty one is among them.
  const json& undecided = report["budget"]["undecided"];
  EXPECT_LT(undecided["modules"].size(), 6u) << undecided.dump(2);
  EXPECT_NE(std::find(undecided["modules"].begin(), undecided["modules"].end(), module),
            undecided["modules"].end())
      << undecided.dump(2);

  // The same search with the default budget goes to the end within it.
  const json whole =
      localize({"localize", zooPath("gpt2-tiny.pt"), "--profile", profile, "--adapt", "--json"});
  ASSERT_EQ(whole["status"], "localized") << whole.dump(2);
  EXPECT_FALSE(whole["budget"]["exhausted"]);
  EXPECT_EQ(whole["budget"]["runs"], whole["device_runs"]);

  // Too small a budget, or one for the pass bisection, is refused before any run.
  const Result tiny =
      stickler({"localize", zooPath("gpt2-tiny.pt"), "--profile", profile, "--max-runs", "2"});
  EXPECT_EQ(tiny.status, 2);
  EXPECT_NE(tiny.err.find("max_runs"), std::string::npos) << tiny.err;
  const Result passes = stickler(
      {"localize", zooPath("gpt2-tiny.pt"), "--profile", profile, "--passes", "--all-causes"});
  EXPECT_EQ(passes.status, 2);
  EXPECT_NE(passes.err.find("all_causes and max_runs apply to the search over modules"),
            std::string::npos)
      << passes.err;
}

// The fp32 and float64 reference outputs a numerical repro stores beside its captured inputs.
std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> storedReferences(
    const std::string& archive) {
  torch::jit::ExtraFilesMap files = {{ModelCard::kReferenceOutputsPath, ""}};
  torch::jit::load(archive, c10::nullopt, files);
  const c10::IValue pair =
      torch::jit::pickle_load(std::vector<char>(files[ModelCard::kReferenceOutputsPath].begin(),
                                                files[ModelCard::kReferenceOutputsPath].end()));
  auto tensors = [](const c10::IValue& tuple) {
    std::vector<at::Tensor> out;
    for (const auto& value : tuple.toTupleRef().elements()) out.push_back(value.toTensor());
    return out;
  };
  return {tensors(pair.toTupleRef().elements()[0]), tensors(pair.toTupleRef().elements()[1])};
}

TEST(LocalizeCauses, TheOperatorWithinTheCulpritIsNamedConfirmedAndReproduced) {
  // Only the softmax of the first attention layer is faulty (its outputs 3 times too large):
  // the module search names the attention module, then its own operators are searched the
  // same way, and the softmax is named, with its node, source line, shapes and dtypes. Its
  // reproducer is that softmax alone, on the inputs the model fed it.
  const std::string path = testing::scaledOperatorProfile("aten::softmax", "transformer.h.0.attn");
  const std::string bundles = ::testing::TempDir() + "operator-repros-" + std::to_string(getpid());
  const json report = localize({"localize", zooPath("gpt2-tiny.pt"), "--profile", path, "--adapt",
                                "--bundle-dir", bundles, "--json"});
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], "transformer.h.0.attn");
  ASSERT_TRUE(report.contains("culprit_operators")) << report.dump(2);
  const json& found = report["culprit_operators"];
  EXPECT_EQ(found["kind"], "operator");
  EXPECT_GT(found["candidates"].get<int64_t>(), 3);  // the attention's own operators
  ASSERT_EQ(found["operators"].size(), 1u) << found.dump(2);
  const json& op = found["operators"][0];
  EXPECT_EQ(op["op"], "aten::softmax");
  EXPECT_NE(op["where"].get<std::string>().find("aten::softmax in transformer.h.0.attn"),
            std::string::npos)
      << op["where"];
  ASSERT_FALSE(op["inputs"].empty());
  EXPECT_EQ(op["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(op["outputs"][0]["shape"], op["inputs"][0]["shape"]);
  EXPECT_FALSE(op["cpu_fallback"]);
  // Confirmed as a module is: alone on the device the model fails, with the attention's other
  // operators there it passes; each of those runs is in the list, after the module's.
  EXPECT_EQ(found["confirmation"]["alone_on_device"], "fail");
  EXPECT_EQ(found["confirmation"]["everything_else_on_device"], "pass");
  EXPECT_TRUE(found["confirmation"]["confirmed"]);
  const std::string node = "aten::softmax (node " + std::to_string(op["node"].get<int64_t>()) + ")";
  EXPECT_EQ(runLabelled(report, "only " + node + " of transformer.h.0.attn")["verdict"], "fail");
  EXPECT_EQ(runLabelled(report, "everything but " + node + " of transformer.h.0.attn")["verdict"],
            "pass");
  EXPECT_EQ(found["first_run"].get<int64_t>() + found["runs"].get<int64_t>() - 1,
            report["device_runs"].get<int64_t>());
  EXPECT_LE(report["device_runs"].get<int64_t>(), report["budget"]["max_runs"].get<int64_t>());
  EXPECT_NE(report["summary"].get<std::string>().find("within it, the operator " + node),
            std::string::npos)
      << report["summary"];

  // The numerics' first onset is the dropout after the softmax, which only carries it.
  EXPECT_EQ(report["numerics_onset"]["module"], "transformer.h.0.attn.attn_dropout");
  EXPECT_EQ(report["numerics_onset"]["relation"], "fed_by_culprit");
  EXPECT_FALSE(report["numerics_onset"]["own_operators"]);

  // The reproducer: the softmax under its module path (the fault strikes by path), a small
  // archive that fails `stickler run` on the faulty profile and passes without its faults.
  const json& repro = report["repro"];
  ASSERT_TRUE(repro.value("reproduces", false)) << repro.dump(2);
  EXPECT_EQ(repro["scope"], "operator, at its module path transformer.h.0.attn");
  EXPECT_EQ(repro["grown"], 0);  // the softmax at no path is not tried: it could not fail
  const std::string archive = repro["archive"];
  EXPECT_EQ(archive.rfind(bundles, 0), 0u) << archive;
  EXPECT_LT(std::filesystem::file_size(archive) * 10,
            std::filesystem::file_size(zooPath("gpt2-tiny.pt")));
  const Result faulty = stickler({"run", archive, "--backend", "spyre-sim:" + path, "--json"});
  EXPECT_EQ(faulty.status, 1) << faulty.err;
  const json failed = json::parse(faulty.out);
  ASSERT_EQ(failed["comparison"]["outputs"].size(), 1u);
  const json& output = failed["comparison"]["outputs"][0];
  EXPECT_EQ(output["kind"], "activation");
  EXPECT_EQ(output["verdict"], "fail");
  // Three times too large: an error of 2 against a tolerance of a few DL16 roundoffs.
  EXPECT_NEAR(output["relative_l2"].get<double>(), 2.0, 0.01);
  EXPECT_LT(output["relative_l2_tolerance"].get<double>(), 0.05);
  const json& numerics = repro["numerics"];
  EXPECT_TRUE(numerics["clean_passes"]);
  const Result clean = stickler(
      {"run", archive, "--backend", "spyre-sim:" + numerics["clean_profile"].get<std::string>()});
  EXPECT_EQ(clean.status, 0) << clean.out << clean.err;
  EXPECT_EQ(repro["command"], "stickler run " + archive + " --backend spyre-sim:" + path);
  // It holds the softmax's real inputs and both references, which agree with each other far
  // better than the device does with either.
  const auto [fp32, float64] = storedReferences(archive);
  ASSERT_EQ(fp32.size(), 1u);
  ASSERT_EQ(float64.size(), 1u);
  EXPECT_EQ(fp32[0].scalar_type(), at::kFloat);
  EXPECT_EQ(float64[0].scalar_type(), at::kDouble);
  EXPECT_EQ(fp32[0].sizes().vec(), op["outputs"][0]["shape"].get<std::vector<int64_t>>());
  EXPECT_LT((fp32[0].to(at::kDouble) - float64[0]).norm().item<double>(),
            1e-5 * float64[0].norm().item<double>());
  EXPECT_TRUE(std::filesystem::exists(repro["directory"].get<std::string>() + "/README.md"));
}

// The case: the attention's own operator (here the merge of its heads) is faulty, and
// the first module over its threshold in the whole-model run is its output projection, which
// is only fed the bad value. The report says so, with the run that shows the projection alone
// passes.
TEST(LocalizeCauses, AnOnsetFedByTheCulpritIsExplainedNotBlamed) {
  const std::string profile =
      testing::scaledOperatorProfile("aten::contiguous", "transformer.h.0.attn");
  const json report = localize({"localize", zooPath("gpt2-tiny.pt"), "--profile", profile,
                                "--adapt", "--no-repro", "--json"});
  ASSERT_EQ(report["status"], "localized") << report.dump(2);
  EXPECT_EQ(report["culprit"]["module"], "transformer.h.0.attn");
  EXPECT_EQ(report["culprit_operators"]["operators"][0]["op"], "aten::contiguous");
  const json& onset = report["numerics_onset"];
  EXPECT_EQ(onset["module"], "transformer.h.0.attn.c_proj");
  EXPECT_EQ(onset["relation"], "fed_by_culprit");
  EXPECT_TRUE(onset["own_operators"]);
  EXPECT_EQ(onset["alone_on_device"], "pass");
  EXPECT_GT(onset["ratio_to_emulated"].get<double>(), 10.0);
  const std::string explanation =
      "onset in transformer.h.0.attn.c_proj, fed by the culprit transformer.h.0.attn; "
      "transformer.h.0.attn.c_proj alone on the device passes";
  EXPECT_EQ(onset["explanation"], explanation);
  EXPECT_NE(report["summary"].get<std::string>().find(explanation), std::string::npos)
      << report["summary"];
  EXPECT_EQ(runLabelled(report,
                        "only transformer.h.0.attn.c_proj (the numerics' first onset)")["verdict"],
            "pass");
  EXPECT_FALSE(report.contains("repro"));
}

}  // namespace
}  // namespace stickler
