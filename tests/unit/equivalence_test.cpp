// The equivalence check: the same mathematics judged in float64, no worse in float32, on the
// modules an adapter changed. Every verdict asserted here holds on any CPU and with any BLAS
// library (the README's test command runs this file again on the reference BLAS): nothing
// asserts bitwise or ULP-exact agreement of computations whose summation order a library picks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <torch/script.h>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_file.h"
#include "adapters/engine/adapter_stacking.h"
#include "adapters/engine/equivalence/agreement.h"
#include "adapters/engine/equivalence/change_region.h"
#include "adapters/engine/equivalence/equivalence.h"
#include "adapters/engine/equivalence/region_program.h"
#include "adapters/engine/recipe_replay.h"
#include "adapters/engine/stacking_record.h"
#include "simulator/backends/device_run_job.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/graph_fingerprint.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/model_card.h"
#include "simulator/graph/model_facts.h"
#include "simulator/interpreter/sixteen_bit.h"
#include "simulator/support/blas_library.h"
#include "simulator/support/errors.h"
#include "simulator/support/large_blocks.h"
#include "tests/unit/adapter_test_support.h"
#include "tests/unit/scoped_cache_dir.h"
#include "tests/unit/zoo.h"
#include "tools/adapters/adapter_json.h"
#include "tools/adapters/adapter_support.h"

namespace stickler {
namespace {

using testing::rewriteFor;
using testing::zooPath;

// ---- The criteria, on tensors made here ----

// Sums of `terms` (rows of [n, k]) in the given order and precision, term by term.
at::Tensor rowSums(const at::Tensor& terms, bool reversed, c10::ScalarType type) {
  const at::Tensor values = terms.to(type).contiguous();
  at::Tensor sums = at::zeros({values.size(0)}, values.options());
  for (int64_t i = 0; i < values.size(0); ++i) {
    at::Tensor total = at::zeros({}, values.options());
    for (int64_t j = 0; j < values.size(1); ++j) {
      total = total + values[i][reversed ? values.size(1) - 1 - j : j];
    }
    sums[i] = total;
  }
  return sums;
}

struct Sums {
  at::Tensor original32, adapted32, original64, adapted64;
};

// The same sums in two orders: forward for the original, backward for the adapted.
Sums reorderedSums() {
  at::manual_seed(7);
  const at::Tensor terms = at::randn({64, 48}, at::kDouble);
  return {rowSums(terms, false, at::kFloat), rowSums(terms, true, at::kFloat),
          rowSums(terms, false, at::kDouble), rowSums(terms, true, at::kDouble)};
}

AgreementSummary judge(const Sums& sums) {
  Agreement agreement;
  agreement.add("sums", 0, sums.original32, sums.adapted32, sums.original64, sums.adapted64);
  return agreement.summary();
}

// The float64 truth of a model with a large table and a large projection (bfloat16, as real
// checkpoints are): widened as read, it holds a slice of the projection at a time and none of
// the table, and its result is the float64 computation's.
TEST(Equivalence, Float64TruthHoldsASliceOfALargeWeightNotTheWeight) {
  at::manual_seed(11);
  const int64_t vocab = 16384, hidden = 1024;  // each weight 16.8M elements, four slices
  torch::jit::Module module("LargeWeights");
  const at::Tensor table = at::randn({vocab, hidden}).to(at::kBFloat16);
  const at::Tensor projection = (at::randn({vocab, hidden}) * 0.03).to(at::kBFloat16);
  const at::Tensor bias = at::randn({vocab}).to(at::kBFloat16);
  module.register_parameter("table", table, false);
  module.register_parameter("projection", projection, false);
  module.register_parameter("bias", bias, false);
  module.define(
      "def forward(self, ids):\n"
      "    hidden = torch.embedding(self.table, ids)\n"
      "    return torch.linear(hidden, self.projection, self.bias)\n");
  const std::string path = testing::uniqueTempPath("large-weights.pt");
  module.save(path, {{"stickler/model.json",
                      R"({"inputs": [{"name": "ids", "shape": [1, 8], "dtype": "int64",
                          "kind": "token_ids", "vocab_size": 16384}]})"}});
  const auto model = loadModel(path);
  const ChangeRegion whole = wholeModelRegion(*model, *model);
  const RegionProgram program(*model, whole.before_nodes, whole.before_inputs, whole.before_outputs,
                              Precision::kFloat64);
  WideningBuffers buffers(c10::kDouble);
  const auto outputs = program.run(model->example_inputs, &buffers);
  ASSERT_EQ(outputs.size(), 1u);
  const at::Tensor ids = model->example_inputs.at(0).toTensor();
  const at::Tensor truth = at::linear(at::embedding(table.to(at::kDouble), ids),
                                      projection.to(at::kDouble), bias.to(at::kDouble));
  const at::Tensor result = outputs[0].toTensor();
  ASSERT_EQ(result.scalar_type(), at::kDouble);
  // float64 sums of 1024 products in any order: far below float32's rounding.
  EXPECT_LT((result - truth).abs().max().item<double>(), 1e-9 * truth.abs().max().item<double>());
  // One slice of the projection in float64 (with a slice of the bias and the gathered rows),
  // never a whole weight.
  const size_t weight_in_float64 = static_cast<size_t>(vocab * hidden) * sizeof(double);
  EXPECT_LE(buffers.bytes(),
            static_cast<size_t>(kLinearSliceElements) * sizeof(double) + (size_t{1} << 20));
  EXPECT_LT(buffers.bytes(), weight_in_float64 / 3);
  std::remove(path.c_str());
}

constexpr int64_t kResultRows = 1024, kResultColumns = 2048;  // 8 MiB in float32, 16 in float64

// A model whose one output is a large tensor (kResultRows x kResultColumns), at `path`.
std::shared_ptr<const LoadedModel> largeResultsModel(const std::string& path) {
  at::manual_seed(12);
  torch::jit::Module module("LargeResults");
  module.register_parameter("w", at::randn({1, kResultColumns}), false);
  module.define(
      "def forward(self, x):\n"
      "    return torch.matmul(x, self.w)\n");
  module.save(path, {{"stickler/model.json",
                      R"({"inputs": [{"name": "x", "shape": [1024, 1], "dtype": "float32",
                          "kind": "float"}]})"}});
  return loadModel(path);
}

// A check runs its draws one after another, each compared and dropped before the next runs: what
// it holds at once is one draw's results in both precisions, whatever the number of draws.
TEST(Equivalence, ACheckHoldsOneDrawsResultsAtATime) {
  const std::string path = testing::uniqueTempPath("large-results.pt");
  const auto model = largeResultsModel(path);
  const size_t result32 = static_cast<size_t>(kResultRows * kResultColumns) * sizeof(float);
  // The first draw's float32 result is the model's own example output, held before and after.
  const int draws = 4;
  resetLargeBlocksLivePeak();
  const size_t before = largeBlocksLive();
  const EquivalenceResult result = checkWholeModel(*model, *model, draws);
  EXPECT_TRUE(result.accepted()) << result.problem();
  EXPECT_EQ(result.inputs_checked, draws);
  const size_t held = largeBlocksLivePeak() - before;
  // One draw: two float64 results and two float32 ones (the inputs and widened weight are small),
  // and the comparison's temporaries; every draw's at once would be over 3.5 draws' results.
  const size_t one_draw = 2 * (2 * result32) + 2 * result32;
  EXPECT_GE(held, result32) << "the check's results are large blocks";
  EXPECT_LT(held, 2 * one_draw) << "the results of more than one draw at once";
  std::remove(path.c_str());
}

// The blocks a check's draws freed for one another are given back when it ends, not held through
// what comes next (a model host's run, in the gate).
TEST(Equivalence, ACheckGivesBackTheBlocksItFreed) {
  const std::string path = testing::uniqueTempPath("large-results.pt");
  const auto model = largeResultsModel(path);
  const EquivalenceResult result = checkWholeModel(*model, *model, 3);
  EXPECT_TRUE(result.accepted()) << result.problem();
  EXPECT_EQ(largeBlocksKept(), 0u);
  // That the check made large blocks at all, which it would have kept: a second check reaches a
  // peak above what is live after it.
  resetLargeBlocksLivePeak();
  const size_t before = largeBlocksLive();
  EXPECT_TRUE(checkWholeModel(*model, *model, 3).accepted());
  const size_t result64 = static_cast<size_t>(kResultRows * kResultColumns) * sizeof(double);
  EXPECT_GE(largeBlocksLivePeak() - before, result64);
  EXPECT_EQ(largeBlocksKept(), 0u);
  std::remove(path.c_str());
}

TEST(Equivalence, ASumInAnotherOrderIsTheSameMathematics) {
  const Sums sums = reorderedSums();
  ASSERT_FALSE(at::equal(sums.original64, sums.adapted64));  // the orders do round differently
  const AgreementSummary summary = judge(sums);
  EXPECT_TRUE(summary.same_math) << summary.problem;
  EXPECT_TRUE(summary.no_worse) << summary.problem;
  EXPECT_LT(summary.float64_ratio, 0.1);  // far inside the tolerance
}

TEST(Equivalence, AMillionthMoreIsAnotherMathematics) {
  Sums sums = reorderedSums();
  sums.adapted64 = sums.original64 * (1 + 1e-6);
  sums.adapted32 = sums.original32 * (1 + 1e-6);
  const AgreementSummary summary = judge(sums);
  EXPECT_FALSE(summary.same_math);
  EXPECT_GT(summary.float64_ratio, 1e3);
  // The refusal names where and what, in both precisions.
  EXPECT_NE(summary.problem.find("not the same mathematics: sums at ["), std::string::npos)
      << summary.problem;
  EXPECT_NE(summary.problem.find("float64"), std::string::npos) << summary.problem;
  EXPECT_NE(summary.problem.find("float32"), std::string::npos) << summary.problem;
}

TEST(Equivalence, MoreRoundingInFloat32IsWorse) {
  Sums sums = reorderedSums();
  sums.adapted32 = sums.original64.to(at::kBFloat16).to(at::kFloat);  // 8 significant bits
  sums.adapted64 = sums.original64;
  const AgreementSummary summary = judge(sums);
  EXPECT_TRUE(summary.same_math);
  EXPECT_FALSE(summary.no_worse);
  EXPECT_GT(summary.float32_factor, kFloat32Factor);
  EXPECT_NE(summary.problem.find("worse in float32: sums"), std::string::npos) << summary.problem;
}

TEST(Equivalence, ShapesIntegersAndNonFiniteValuesMustMatch) {
  const Sums sums = reorderedSums();
  {
    Agreement agreement;
    agreement.add("padded", 0, sums.original32, at::cat({sums.original32, sums.original32}),
                  sums.original64, at::cat({sums.original64, sums.original64}));
    EXPECT_NE(agreement.summary().problem.find("shape [64] became [128]"), std::string::npos)
        << agreement.summary().problem;
  }
  {
    const at::Tensor ids = at::arange(10);
    at::Tensor other = ids.clone();
    other[3] = 4;
    Agreement agreement;
    agreement.add("ids", 1, ids, other, ids, other);
    EXPECT_NE(agreement.summary().problem.find("ids at [3] (input draw 2): 3 became 4"),
              std::string::npos)
        << agreement.summary().problem;
  }
  {
    at::Tensor nan = sums.adapted64.clone();
    nan[5] = std::nan("");
    Agreement agreement;
    agreement.add("sums", 0, sums.original32, sums.adapted32, sums.original64, nan);
    EXPECT_FALSE(agreement.summary().same_math);
    EXPECT_NE(agreement.summary().problem.find("sums at [5]"), std::string::npos);
  }
}

// ---- Adapters on zoo models ----

AdapterApplication apply(const AdapterFile& adapter, const std::string& model) {
  return applyAdapter(adapter, loadModel(zooPath(model + ".pt")), loadProfile("spyre-2026"));
}

// A refusal for changed mathematics names the numbers and the position in both precisions.
void expectDifferentMath(const AdapterApplication& application) {
  ASSERT_TRUE(application.changed());
  EXPECT_FALSE(application.accepted());
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kDifferentMath);
  const std::string& problem = application.equivalence.problem();
  EXPECT_EQ(problem.rfind("not the same mathematics: ", 0), 0u) << problem;
  for (const char* part : {" at [", "float64 ", " became ", "tolerance", "; float32 "}) {
    EXPECT_NE(problem.find(part), std::string::npos) << part << " in: " << problem;
  }
}

TEST(EquivalenceAdapters, AScaleOfOnePlusOneMillionthIsRefused) {
  const auto application = apply(rewriteFor("rsqrt-a-millionth-more", R"(
def pattern(x: Tensor):
    return torch.rsqrt(x)


def replacement(x: Tensor):
    return torch.rsqrt(x) * 1.000001
)"),
                                 "llama-tiny");
  expectDifferentMath(application);
  // Found on the norms the rewrite touched, then confirmed on the whole model's results: the
  // refusal says where it starts and what reaches the logits.
  EXPECT_EQ(application.equivalence.scope, "whole model");
  // (Whichever of the norms differs most is named: each one does.)
  EXPECT_NE(application.equivalence.region_problem.find("the results of model."), std::string::npos)
      << application.equivalence.region_problem;
  EXPECT_NE(application.equivalence.region_problem.find("norm"), std::string::npos)
      << application.equivalence.region_problem;
  EXPECT_NE(application.equivalence.problem().find("and in the model's results: output 0 at ["),
            std::string::npos)
      << application.equivalence.problem();
}

TEST(EquivalenceAdapters, TheTanhGeluInPlaceOfTheErfGeluIsRefused) {
  expectDifferentMath(apply(rewriteFor("gelu-tanh-for-erf", R"(
def pattern(x: Tensor):
    return torch.gelu(x)


def replacement(x: Tensor):
    return torch.gelu(x, approximate="tanh")
)"),
                            "bert-tiny"));
}

// bert-tiny with the non-zero biases a trained model has (the zoo's are zero, as freshly
// initialized ones are, and dropping a zero bias changes nothing).
std::string bertWithBiases() {
  const std::string out = testing::uniqueTempPath("bert-tiny-biases.pt");
  torch::jit::ExtraFilesMap extra{{ModelCard::kArchivePath, ""}};
  torch::jit::Module module = torch::jit::load(zooPath("bert-tiny.pt"), torch::kCPU, extra);
  torch::NoGradGuard no_grad;
  at::manual_seed(3);
  for (const auto& parameter : module.named_parameters()) {
    if (parameter.name.size() >= 4 && parameter.name.substr(parameter.name.size() - 4) == "bias") {
      parameter.value.uniform_(-0.1, 0.1);
    }
  }
  module.save(out, extra);
  return out;
}

TEST(EquivalenceAdapters, DroppingABiasIsRefused) {
  const AdapterFile drop = rewriteFor("drop-linear-bias", R"(
def pattern(x: Tensor, w: Tensor, b: Tensor):
    return torch.linear(x, w, b)


def replacement(x: Tensor, w: Tensor, b: Tensor):
    return torch.linear(x, w)
)");
  const std::shared_ptr<const LoadedModel> model = loadModel(bertWithBiases());
  expectDifferentMath(applyAdapter(drop, model, loadProfile("spyre-2026")));
  // On the zoo's own bert-tiny every bias is zero: dropping them computes the same.
  EXPECT_TRUE(apply(drop, "bert-tiny").accepted());
}

TEST(EquivalenceAdapters, MovingAScaleAcrossAMatmulIsTheSameMathematics) {
  const auto application = apply(rewriteFor("scale-queries-first", R"(
def pattern(q: Tensor, k: Tensor, scale: float):
    return torch.matmul(q, k.transpose(2, 3)) * scale


def replacement(q: Tensor, k: Tensor, scale: float):
    return torch.matmul(q * scale, k.transpose(2, 3))
)"),
                                 "llama-tiny");
  ASSERT_TRUE(application.changed());
  EXPECT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(application.equivalence.scope, "region");
}

TEST(EquivalenceAdapters, TheSameMathematicsThatOverflowsFloat32IsRefusedAsWorse) {
  // x * x as (x * 2^100)^2 * 2^-200: exact in float64, overflow and underflow in float32.
  const auto application = apply(rewriteFor("square-scaled-out-of-range", R"(
def pattern(x: Tensor):
    return x.pow(2)


def replacement(x: Tensor):
    y = x * 1.2676506002282294e30
    return (y * y) * 6.223015277861142e-61
)"),
                                 "llama-tiny");
  ASSERT_TRUE(application.changed());
  EXPECT_FALSE(application.accepted());
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kWorseInFloat32)
      << application.equivalence.problem();
  EXPECT_EQ(application.equivalence.problem().rfind("worse in float32: ", 0), 0u)
      << application.equivalence.problem();
}

TEST(EquivalenceAdapters, AMaskBuiltInTheRootModuleIsCheckedOnTheWholeModel) {
  AdapterFile mask = readAdapterFile(shippedCatalogDir() + "/mask-fill-in-device-range.py");
  const auto application =
      applyAdapter(mask, loadModel(zooPath("bert-tiny.pt")), loadProfile("spyre-2026"));
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(application.equivalence.scope, "whole model");
  EXPECT_NE(application.equivalence.why_whole.find("root module"), std::string::npos)
      << application.equivalence.why_whole;
}

TEST(EquivalenceAdapters, TheWholeStackIsCheckedOnce) {
  const std::shared_ptr<const LoadedModel> original = loadModel(zooPath("gpt2-tiny.pt"));
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  std::shared_ptr<const LoadedModel> model = original;
  for (const char* name : {"pow-cube-as-mul", "pad-logits-to-sticks"}) {
    const auto application =
        applyAdapter(readAdapterFile(shippedCatalogDir() + "/" + name + ".py"), model, profile);
    ASSERT_TRUE(application.accepted()) << name;
    model = application.after;
  }
  const EquivalenceResult whole = checkWholeModel(*original, *model);
  EXPECT_TRUE(whole.accepted()) << whole.problem();
  EXPECT_EQ(whole.scope, "whole model");
  EXPECT_EQ(whole.inputs_checked, 1);
  const auto json = equivalenceToJson(whole);
  EXPECT_EQ(json["verdict"], "equivalent");
  EXPECT_EQ(json["blas"], blasLibraryPath());
}

// adapt runs the adapted model on the device beside the stack's whole-model check: the work
// given to stackAdapters runs once, on the stack the check then accepts.
std::vector<const CatalogEntry*> entriesNamed(const std::vector<CatalogEntry>& catalog,
                                              const std::vector<std::string>& names) {
  std::vector<const CatalogEntry*> entries;
  for (const std::string& name : names) {
    for (const CatalogEntry& entry : catalog) {
      if (entry.name == name) entries.push_back(&entry);
    }
  }
  return entries;
}

TEST(EquivalenceStack, WorkGivenBesideTheWholeStackCheckRunsOnceOnTheAcceptedStack) {
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const auto entries = entriesNamed(catalog, {"pow-cube-as-mul", "pad-logits-to-sticks"});
  ASSERT_EQ(entries.size(), 2u);
  AdapterStack stack(loadModel(zooPath("gpt2-tiny.pt")));
  int runs = 0;
  size_t applied_when_run = 0;
  const StackingOutcome result =
      stackAdapters(stack, entries, loadProfile("spyre-2025-clean"), StackingChecks::kChecked, [&] {
        ++runs;
        applied_when_run = stack.applied().size();
      });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(applied_when_run, 2u);
  EXPECT_FALSE(result.beside_outdated);
  EXPECT_EQ(result.pushed, 2u);
  ASSERT_TRUE(result.whole_model.has_value());
  EXPECT_EQ(result.whole_model->verdict, EquivalenceResult::Verdict::kEquivalent)
      << result.whole_model->problem();
  EXPECT_EQ(stack.applied().size(), 2u);
  EXPECT_EQ(result.pushedNames(stack),
            (std::vector<std::string>{"pow-cube-as-mul", "pad-logits-to-sticks"}));
}

TEST(EquivalenceStack, AnErrorBesideTheCheckStopsItAndReachesTheCaller) {
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  AdapterStack stack(loadModel(zooPath("gpt2-tiny.pt")));
  try {
    stackAdapters(stack, entriesNamed(catalog, {"pow-cube-as-mul"}),
                  loadProfile("spyre-2025-clean"), StackingChecks::kChecked,
                  [] { throw UserError("the device run failed"); });
    FAIL() << "the error beside the check was lost";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "the device run failed");
  }
  // The stack is left as the adapters made it, usable: the same check, now without work beside.
  ASSERT_EQ(stack.applied().size(), 1u);
  EXPECT_TRUE(checkWholeModel(*stack.original(), *stack.current()).accepted());
}

// ---- A checked stacking, remembered across processes ----

using testing::ScopedCacheDir;

// localize and diagnose with adapt stack the catalog as adapt did on the same model: what adapt
// checked (at 8B, minutes of float64 runs) is applied again without its checks, to the same
// graph; anything the checks depend on that differs (an adapter's text) checks again, and the
// gate's kChecked never relies on a record.
TEST(StackingRecord, AStackingCheckedBeforeIsAppliedAgainWithoutItsChecks) {
  const ScopedCacheDir cache(testing::uniqueTempPath("stacking-records"));
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  const std::shared_ptr<const LoadedModel> original = loadModel(zooPath("gpt2-tiny.pt"));
  const auto entries = entriesNamed(catalog, {"pow-cube-as-mul", "pad-logits-to-sticks"});
  ASSERT_EQ(entries.size(), 2u);

  AdapterStack checked(original);
  const StackingOutcome first = stackAdapters(checked, entries, profile, StackingChecks::kChecked);
  EXPECT_FALSE(first.remembered);
  ASSERT_TRUE(first.whole_model.has_value());
  ASSERT_EQ(first.pushed, 2u);

  AdapterStack again(original);
  const StackingOutcome second =
      stackAdapters(again, entries, profile, StackingChecks::kCheckedOrRemembered);
  EXPECT_TRUE(second.remembered);
  EXPECT_FALSE(second.whole_model.has_value());
  EXPECT_EQ(second.pushedNames(again), first.pushedNames(checked));
  EXPECT_EQ(graphFingerprint(*again.current()->graph), graphFingerprint(*checked.current()->graph));
  EXPECT_EQ(recipeKeyOf(*again.current()), recipeKeyOf(*checked.current()));
  // Only the last model's outputs are read (the diagnosis's reference): the models before it
  // record from shapes, which is all an adapter reads of them.
  EXPECT_TRUE(again.applied().front().after->records_from_shapes);
  EXPECT_FALSE(again.current()->records_from_shapes);
  EXPECT_EQ(recordsFingerprint(*again.current()), recordsFingerprint(*checked.current()));
  EXPECT_TRUE(at::allclose(flattenTensors(again.current()->example_outputs).at(0),
                           flattenTensors(checked.current()->example_outputs).at(0), 1e-4, 1e-5));

  AdapterStack gate(original);
  EXPECT_FALSE(stackAdapters(gate, entries, profile, StackingChecks::kChecked).remembered);

  // A profile that only adds a fault (where the device computes wrongly; the checks run on the
  // CPU) adapts alike: localize's fault profiles find what adapt checked on their parent.
  const DeviceProfile faulty = parseProfile(
      {{"extends", "spyre-2025-clean"},
       {"name", "spyre-2025-clean-wrong-scale"},
       {"faults",
        nlohmann::json::array({{{"id", "wrong-scale"},
                                {"match", {{"module", "transformer.h.0.mlp.c_proj"}}},
                                {"effect", {{"kind", "wrong_scale"}, {"factor", 3.0}}}}})}},
      "spyre-2025-clean-wrong-scale.json");
  EXPECT_NE(faulty.content_sha256, profile.content_sha256);
  AdapterStack under_fault(original);
  EXPECT_TRUE(
      stackAdapters(under_fault, entries, faulty, StackingChecks::kCheckedOrRemembered).remembered);

  // An adapter's text changed: another key, checked again.
  std::vector<CatalogEntry> edited(catalog);
  for (CatalogEntry& entry : edited) {
    if (entry.name == "pow-cube-as-mul") entry.text += "\n# edited\n";
  }
  AdapterStack changed(original);
  const StackingOutcome third =
      stackAdapters(changed, entriesNamed(edited, {"pow-cube-as-mul", "pad-logits-to-sticks"}),
                    profile, StackingChecks::kCheckedOrRemembered);
  EXPECT_FALSE(third.remembered);
  EXPECT_TRUE(third.whole_model.has_value());
}

TEST(StackingRecord, ARecordThatNoLongerAppliesOrIsDamagedIsCheckedAgain) {
  const ScopedCacheDir cache(testing::uniqueTempPath("stacking-records-stale"));
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  const std::shared_ptr<const LoadedModel> original = loadModel(zooPath("gpt2-tiny.pt"));
  const auto entries = entriesNamed(catalog, {"pow-cube-as-mul", "pad-logits-to-sticks"});
  AdapterStack probe(original);
  const std::string key = stackingKey(probe, entries, profile);

  // A record naming an adapter this stacking does not offer: the stack is left as it was, and
  // the stacking is checked (and remembered as checked).
  rememberStacking(key, {{"pow-cube-as-mul", "precompute-rotary-tables"}, ""});
  AdapterStack stale(original);
  const StackingOutcome rechecked =
      stackAdapters(stale, entries, profile, StackingChecks::kCheckedOrRemembered);
  EXPECT_FALSE(rechecked.remembered);
  EXPECT_EQ(rechecked.pushedNames(stale),
            (std::vector<std::string>{"pow-cube-as-mul", "pad-logits-to-sticks"}));
  ASSERT_TRUE(rememberedStacking(key).has_value());
  EXPECT_EQ(rememberedStacking(key)->pushed, rechecked.pushedNames(stale));
  EXPECT_EQ(rememberedStacking(key)->result, stackingResult(*stale.current()));

  // The same adapters, but applied again they make another model than the checked one (records
  // from shapes that differ from values, say): checked again.
  rememberStacking(key, {rechecked.pushedNames(stale), "another model"});
  AdapterStack other(original);
  EXPECT_FALSE(
      stackAdapters(other, entries, profile, StackingChecks::kCheckedOrRemembered).remembered);
  EXPECT_EQ(other.applied().size(), 2u);

  // A damaged record is no record.
  {
    std::ofstream out(std::filesystem::path(cache.dir()) / "stackings" / (key + ".json"));
    out << "{\"pushed\": [";
  }
  EXPECT_FALSE(rememberedStacking(key).has_value());
  AdapterStack damaged(original);
  EXPECT_FALSE(
      stackAdapters(damaged, entries, profile, StackingChecks::kCheckedOrRemembered).remembered);
  EXPECT_EQ(damaged.applied().size(), 2u);
}

// ---- Which BLAS this run computes with ----

// The README's test command runs the adapter and equivalence tests twice: on OpenBLAS (the
// set-up's choice) and on Debian's reference BLAS, whose sums run in another order. This proves
// the second run really used the reference library (STICKLER_EXPECT_BLAS=reference).
// A model host makes its model from the caller's recipe (the archive, the adapters replayed) and
// records what each node sees from shapes alone, without a CPU run of the model per adapter,
// when that gives the records the caller lowers from; the model still runs with its weights.
// Where routing follows values (a mixture of experts), shapes say otherwise and the host records
// from values, as the caller did.
TEST(ModelHost, RecordsFromShapesWhereShapesGiveTheCallersRecords) {
  const ScopedCacheDir cache(testing::uniqueTempPath("model-host-records"));
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const DeviceProfile profile = loadProfile("spyre-2026");
  AdapterStack stack(loadModel(zooPath("../zoo-bfloat16/llama-tiny.pt")));
  const auto entries = entriesNamed(catalog, {"pad-attention-heads", "precompute-rotary-tables"});
  ASSERT_EQ(entries.size(), 2u);
  ASSERT_EQ(stackAdapters(stack, entries, profile, StackingChecks::kUnchecked).pushed, 2u);
  const LoadedModel& caller = *stack.current();
  const auto maker = [](const ModelRecipe& recipe, bool from_shapes) {
    return modelFromRecipe(recipe, from_shapes);
  };

  const HostModel host = makeHostModel(maker, caller.recipe, recordsFingerprint(caller));
  EXPECT_TRUE(host.recorded_from_shapes);
  EXPECT_EQ(graphFingerprint(*host.model->graph), graphFingerprint(*caller.graph));
  EXPECT_EQ(recordsFingerprint(*host.model), recordsFingerprint(caller));
  EXPECT_TRUE(flattenTensors(host.model->example_outputs).at(0).is_meta());
  const at::Tensor expected = flattenTensors(caller.example_outputs).at(0);
  const at::Tensor ran = flattenTensors(host.model->interpreter->run(caller.example_inputs)).at(0);
  EXPECT_FALSE(ran.is_meta());
  EXPECT_TRUE(at::allclose(ran, expected, 1e-4, 1e-5));

  // Without the caller's records to agree with, the host records from values.
  EXPECT_FALSE(makeHostModel(maker, caller.recipe, "").recorded_from_shapes);

  const std::shared_ptr<const LoadedModel> routed = loadModel(zooPath("mixtral-tiny.pt"));
  const HostModel mixture = makeHostModel(maker, routed->recipe, recordsFingerprint(*routed));
  EXPECT_FALSE(mixture.recorded_from_shapes);
  EXPECT_EQ(recordsFingerprint(*mixture.model), recordsFingerprint(*routed));
  LoadOptions from_shapes;
  from_shapes.records_from_shapes = true;
  EXPECT_NE(recordsFingerprint(*loadModel(zooPath("mixtral-tiny.pt"), from_shapes)),
            recordsFingerprint(*routed));
}

// A command line's diagnosis after adapt reads the adapted model's outputs only: the archive and
// the adapted models before the last record from shapes, and the stacking adapt checked is
// applied again; the model it makes is the checked one, node for node and record for record,
// and computes the same outputs.
TEST(StackingRecord, ACommandLineDiagnosisAppliesItWithoutACpuRunOfTheArchive) {
  const ScopedCacheDir cache(testing::uniqueTempPath("stacking-records-command-line"));
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const DeviceProfile profile = loadProfile("spyre-2026");
  const std::string path = zooPath("../zoo-bfloat16/llama-tiny.pt");
  const auto meant_for = [&](const LoadedModel& model) {
    return adaptersMeantFor(catalog, model, &profile);
  };
  EXPECT_FALSE(rememberedAdaptation(path, {}, meant_for, profile).has_value());  // no record

  AdapterStack checked(loadModel(path));
  const StackingOutcome adapt = stackAdapters(checked, meant_for(*checked.current()), profile);
  ASSERT_GE(adapt.pushed, 2u);
  const auto again = rememberedAdaptation(path, {}, meant_for, profile);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->pushed, adapt.pushedNames(checked));
  EXPECT_FALSE(again->model->records_from_shapes);
  EXPECT_EQ(stackingResult(*again->model), stackingResult(*checked.current()));
  EXPECT_TRUE(at::allclose(flattenTensors(again->model->example_outputs).at(0),
                           flattenTensors(checked.current()->example_outputs).at(0), 1e-4, 1e-5));

  // Looked at before its reference run (a model host made beside it, model_host_ahead.h), the
  // last model is recorded from shapes, with the records adapt's checked model has from values;
  // the model given back records from values after the look.
  std::shared_ptr<const LoadedModel> seen;
  const auto looked =
      rememberedAdaptation(path, {}, meant_for, profile,
                           [&](const std::shared_ptr<const LoadedModel>& model) { seen = model; });
  ASSERT_TRUE(looked.has_value());
  ASSERT_NE(seen, nullptr);
  EXPECT_TRUE(seen->records_from_shapes);
  EXPECT_EQ(stackingResult(*seen), stackingResult(*checked.current()));
  EXPECT_FALSE(looked->model->records_from_shapes);
  EXPECT_EQ(stackingResult(*looked->model), stackingResult(*checked.current()));
  EXPECT_TRUE(at::allclose(flattenTensors(looked->model->example_outputs).at(0),
                           flattenTensors(checked.current()->example_outputs).at(0), 1e-4, 1e-5));
}

TEST(BlasLibrary, IsTheOneThisRunAskedFor) {
  const char* expected = std::getenv("STICKLER_EXPECT_BLAS");
  const std::string library = blasLibraryPath();
  ASSERT_FALSE(library.empty()) << "no library provides sgemm_";
  const bool openblas = library.find("openblas") != std::string::npos;
  if (expected != nullptr && std::string(expected) == "reference") {
    EXPECT_FALSE(openblas) << library;
    EXPECT_NE(library.find("/blas/libblas.so"), std::string::npos) << library;
  } else {
    EXPECT_TRUE(openblas) << library;
  }
}

}  // namespace
}  // namespace stickler
