// The adapter engine on the zoo: rewrites and transforms, the equivalence check, the stack,
// saving an adapted archive, matching, and the workspace catalog through the tools.
#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/engine/adapted_archive.h"
#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_matching.h"
#include "adapters/engine/adapter_stack.h"
#include "adapters/engine/adapter_stacking.h"
#include "adapters/engine/equivalence/agreement.h"
#include "adapters/engine/equivalence/equivalence.h"
#include "adapters/engine/graph_rewrite.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/backends/backend.h"
#include "simulator/backends/float64_graph.h"
#include "simulator/device/device_profile.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/model_cache.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/check_support.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/lowering/op_classes.h"
#include "simulator/support/errors.h"
#include "simulator/support/sha256.h"
#include "simulator/support/text_files.h"
#include "tests/cli/fault_profiles.h"
#include "tests/unit/adapter_test_support.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::countOps;
using testing::rewriteFor;
using testing::zooPath;

std::shared_ptr<const LoadedModel> load(const std::string& name) {
  return loadModel(zooPath(name + ".pt"));
}

AdapterFile shipped(const std::string& name) {
  return readAdapterFile(shippedCatalogDir() + "/" + name + ".py");
}

// An adapter for spyre-2026, test-transform.py, that calls `transform` within `max_ulps`.
AdapterFile transformAdapter(const std::string& transform, int max_ulps = 0) {
  return parseAdapterFile(
      "name = \"test-transform\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
      "profiles = [\"spyre-2026\"]\nremove_when = \"r\"\nmax_ulps = " +
          std::to_string(max_ulps) + "\ntransform = " + transform + "\n",
      "test-transform.py");
}

std::vector<std::string> opSequence(const LoadedModel& model) {
  std::vector<std::string> ops;
  for (const auto* node : allNodes(*model.graph)) ops.push_back(node->kind().toQualString());
  return ops;
}

int blockersWithRule(const LoadedModel& model, const DeviceProfile& profile,
                     const std::string& rule) {
  int count = 0;
  for (const auto& blocker : countBlockers(model, profile)) {
    if (blocker.rule == rule) count += blocker.count;
  }
  return count;
}

const std::string kCubeAsSquare = R"(name = "cube-as-square"
gap = "aten::pow cannot be lowered"
why = "wrong on purpose: a square is not a cube"
models = ["*"]
profiles = ["spyre-2025-clean"]
remove_when = "never"


def pattern(x: Tensor):
    return torch.pow(x, 3.0)


def replacement(x: Tensor):
    return x * x
)";

TEST(AdapterEngine, PowSquareRewriteKeepsModulePathsAndIsTheSameMathematics) {
  const auto model = load("qwen2-hd128");
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  ASSERT_GT(blockersWithRule(*model, profile, "unsupported-op"), 0);
  const auto application = applyAdapter(shipped("pow-square-as-mul"), model, profile);
  ASSERT_TRUE(application.accepted());
  EXPECT_EQ(application.change.rewrites, countOps(*model, "aten::pow"));
  EXPECT_EQ(countOps(*application.after, "aten::pow"), 0);
  EXPECT_EQ(countOps(*application.after, "aten::mul"),
            countOps(*model, "aten::mul") + countOps(*model, "aten::pow"));
  // pow(x, 2) and x * x are the same mathematics: float64 agrees to float64 rounding, and the
  // float32 error is about the original's: both round x² once, so at most a few values round
  // differently (whether none do depends on the kernels a CPU picks, so that is not asserted).
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_LE(application.equivalence.agreement.float64_ratio, 1.0);
  EXPECT_LE(application.equivalence.agreement.float32_factor, 1.5);
  EXPECT_EQ(application.equivalence.inputs_checked, 3);
  EXPECT_EQ(application.equivalence.scope, "region");  // the norms, not the model
  EXPECT_EQ(blockersWithRule(*application.after, profile, "unsupported-op"), 0);
  for (const auto& added : application.change.added) {
    EXPECT_EQ(added.op, "aten::mul");
    // input_layernorm, post_attention_layernorm, model.norm: the RMSNorms that squared.
    EXPECT_NE(added.module.find("norm"), std::string::npos) << added.module;
  }
  for (const auto& removed : application.change.removed) {
    EXPECT_EQ(removed.op, "aten::pow");
  }
}

TEST(AdapterEngine, AnAdapterThatChangesTheMathIsRefused) {
  const auto model = load("gpt2-tiny");
  const AdapterFile wrong = parseAdapterFile(kCubeAsSquare, "cube-as-square.py");
  const auto application = applyAdapter(wrong, model, loadProfile("spyre-2025-clean"));
  EXPECT_TRUE(application.changed());
  EXPECT_FALSE(application.accepted());
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kDifferentMath);
  EXPECT_GT(application.equivalence.agreement.float64_ratio, 1e6);
  EXPECT_NE(application.equivalence.problem().find("float64"), std::string::npos);
}

TEST(AdapterEngine, TheCubeRewriteIsTheSameMathematics) {
  const auto model = load("gpt2-tiny");
  const auto application =
      applyAdapter(shipped("pow-cube-as-mul"), model, loadProfile("spyre-2025-clean"));
  EXPECT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  // What the file states stays information beside what was measured.
  EXPECT_EQ(application.equivalence.stated_max_ulps, 4);
}

TEST(AdapterEngine, TorchScriptErrorsPointIntoTheAdapterFile) {
  std::string text = kCubeAsSquare;
  text.replace(text.find("return x * x"), 12, "return cube(x)");
  const AdapterFile file = parseAdapterFile(text, "cube-as-square.py");
  try {
    applyAdapter(file, load("gpt2-tiny"), loadProfile("spyre-2025-clean"));
    FAIL() << "an undefined function compiled";
  } catch (const UserError& e) {
    // `return cube(x)` is line 14; `cube` starts at column 12.
    EXPECT_EQ(std::string(e.what()).rfind("cube-as-square.py:14:12: TorchScript:", 0), 0)
        << e.what();
  }
}

TEST(AdapterEngine, AConditionTurnsDownMatches) {
  std::string text = readAdapterFile(shippedCatalogDir() + "/mask-fill-in-device-range.py").path;
  std::ifstream in(text);
  std::stringstream source;
  source << in.rdbuf();
  std::string strict = source.str();
  strict.replace(strict.find("float(fill) < -65504.0"), 22, "float(fill) < -3.5e38");
  const AdapterFile file = parseAdapterFile(strict, "mask-fill-in-device-range.py");
  const auto application = applyAdapter(file, load("bert-tiny"), loadProfile("spyre-2025-clean"));
  EXPECT_FALSE(application.changed());
  EXPECT_EQ(application.refused_by_condition, 1);
}

// A view's sizes as an adapter binds them: `sizes: List[int]`, the condition then called with
// the list the graph builds.
std::string viewAsReshape(const std::string& condition) {
  return "name = \"view-as-reshape\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
         "profiles = [\"spyre-2026\"]\nremove_when = \"r\"\n\n\n"
         "def pattern(x: Tensor, sizes: List[int]):\n    return x.view(sizes)\n\n\n"
         "def replacement(x: Tensor, sizes: List[int]):\n    return x.reshape(sizes)\n\n\n"
         "def condition(x: Tensor, sizes: List[int]) -> bool:\n    return " +
         condition + "\n";
}

TEST(AdapterEngine, AConditionSeesListParametersAndTurnedDownMatchesSayWhatItSaw) {
  const auto model = load("llama-tiny");
  const DeviceProfile profile = loadProfile("spyre-2026");
  const auto taken = applyAdapter(
      parseAdapterFile(viewAsReshape("len(sizes) == 4 and x.dim() == 3"), "view-as-reshape.py"),
      model, profile);
  EXPECT_TRUE(taken.accepted()) << unchangedReason(taken) << taken.equivalence.problem();
  EXPECT_EQ(taken.refused_by_condition, 0);
  EXPECT_GE(taken.change.rewrites, 3);  // q, k and v of each layer

  const auto refused = applyAdapter(
      parseAdapterFile(viewAsReshape("len(sizes) == 4 and sizes[3] == 1000"), "view-as-reshape.py"),
      model, profile);
  EXPECT_FALSE(refused.changed());
  EXPECT_GE(refused.refused_by_condition, 3);
  ASSERT_EQ(refused.turned_down.size(), kTurnedDownShown);
  const std::string& first = refused.turned_down[0];
  EXPECT_NE(first.find("aten::view in model.layers.0.self_attn"), std::string::npos) << first;
  EXPECT_NE(first.find("condition(x=Tensor(float32, ["), std::string::npos) << first;
  EXPECT_NE(first.find("sizes=[" + std::to_string(model->example_inputs.at(0).toTensor().size(0))),
            std::string::npos)
      << first;
  const std::string reason = unchangedReason(refused);
  EXPECT_NE(reason.find("turned down every match"), std::string::npos) << reason;
  EXPECT_NE(reason.find("more"), std::string::npos) << reason;
}

TEST(AdapterEngine, ATransformThatCannotFinishSaysSoWithWhatItChangedAndWhatFailed) {
  // GPT-2 splits heads with a view of the hidden size: padding the hidden size alone leaves
  // that view reading the old head layout.
  try {
    applyAdapter(transformAdapter("pad_hidden_size()"), load("gpt2-h80"),
                 loadProfile("spyre-2026"));
    FAIL() << "padding the hidden size of gpt2-h80 alone succeeded";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("test-transform.py:8:13: the transform pad_hidden_size could not "
                            "finish: it changed ",
                            0),
              0)
        << message;
    EXPECT_NE(message.find("; added "), std::string::npos) << message;
    EXPECT_NE(message.find("running aten::view in transformer.h.0.attn"), std::string::npos)
        << message;
    EXPECT_EQ(message.find("the model does not run"), std::string::npos) << message;
  }
}

// An RMSNorm variance rewrite for spyre-2026 with the given pattern body.
AdapterFile varianceRewrite(const std::string& pattern) {
  return parseAdapterFile(
      "name = \"variance\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
      "profiles = [\"spyre-2026\"]\nremove_when = \"r\"\n\n\n"
      "def pattern(x: Tensor):\n    return " +
          pattern +
          "\n\n\n"
          "def replacement(x: Tensor):\n    return torch.mean(x * x, -1, keepdim=True)\n",
      "variance.py");
}

TEST(AdapterEngine, ANoMatchNamesTheClosestPartialMatchesAndWhereTheyDiverged) {
  const auto model = load("llama-tiny");
  const DeviceProfile profile = loadProfile("spyre-2026");
  // The model squares with the integer 2.
  const auto float_exponent = applyAdapter(varianceRewrite("x.pow(2.0).mean(-1, keepdim=True)"),
                                           model, profile, /*check_equivalence=*/false);
  EXPECT_FALSE(float_exponent.changed());
  ASSERT_FALSE(float_exponent.closest.empty());
  const std::string constant = unchangedReason(float_exponent);
  EXPECT_NE(constant.find("nothing in the model matches the adapter; the closest: at aten::mean in "
                          "model.layers.0.input_layernorm"),
            std::string::npos)
      << constant;
  EXPECT_NE(constant.find("the pattern has the constant 2.0 (Double), the graph has 2 (Int)"),
            std::string::npos)
      << constant;
  // One explanation for the layers that diverge the same way, not one per layer.
  EXPECT_EQ(float_exponent.closest.size(), 1u) << constant;

  // Another operator where the graph has pow.
  const auto product = applyAdapter(varianceRewrite("(x * x).mean(-1, keepdim=True)"), model,
                                    profile, /*check_equivalence=*/false);
  const std::string op = unchangedReason(product);
  EXPECT_NE(op.find("the pattern has aten::mul where the graph has aten::pow in "
                    "model.layers.0.input_layernorm"),
            std::string::npos)
      << op;

  // An operator the model does not have at all.
  const auto absent = applyAdapter(varianceRewrite("torch.cumsum(x, -1)"), model, profile,
                                   /*check_equivalence=*/false);
  EXPECT_NE(unchangedReason(absent).find("the model has no aten::cumsum"), std::string::npos)
      << unchangedReason(absent);
}

// A rewrite for spyre-2026 named `name`, with the given functions (pattern, condition,
// replacement), as agents write them.
int64_t cpuFallbacks(const LoadedModel& model, const DeviceProfile& profile) {
  return static_cast<int64_t>(compileLoaded(model, profile).fallbacks.size());
}

// The MoE router's topk over 4 experts runs over a partial stick, which the 2026 stack's topk
// kernel does not survive. An agent's adapter pads the routing weights with -inf to a whole stick:
// topk has two results, both read by the model, so the pattern returns both.
const std::string kTopkOverWholeSticks =
    R"(def pattern(x: Tensor, k: int, dim: int, largest: bool, sorted: bool):
    values, indices = torch.topk(x, k, dim, largest, sorted)
    return values, indices


def condition(x: Tensor, k: int, dim: int, largest: bool, sorted: bool) -> bool:
    return largest and (dim == -1 or dim == x.dim() - 1) and x.size(-1) % 64 != 0


def replacement(x: Tensor, k: int, dim: int, largest: bool, sorted: bool):
    padded = torch.constant_pad_nd(x, [0, 64 - x.size(-1) % 64], float("-inf"))
    return torch.topk(padded, k, dim, largest, sorted)
)";

TEST(AdapterEngine, ATopkOverPaddedRouterLogitsReplacesBothResultsAndFoldsItsPadding) {
  const auto model = load("mixtral-tiny");
  const DeviceProfile profile = loadProfile("spyre-2026");
  const AdapterFile adapter = rewriteFor("topk-whole-sticks", kTopkOverWholeSticks);
  const auto application = applyAdapter(adapter, model, profile);
  ASSERT_TRUE(application.accepted())
      << unchangedReason(application) << application.equivalence.problem();
  EXPECT_EQ(application.change.rewrites, countOps(*model, "aten::topk"));  // one per layer
  // The indices pick the experts: a rewrite that replaced only the values would leave the old
  // topk running for them.
  EXPECT_EQ(countOps(*application.after, "aten::topk"), countOps(*model, "aten::topk"));
  EXPECT_EQ(countOps(*application.after, "aten::constant_pad_nd"), application.change.rewrites);
  // The padding's size arithmetic ran once, for the card's shapes; the model says so.
  EXPECT_GE(application.change.folded, 3 * application.change.rewrites);
  EXPECT_TRUE(application.change.fixes_shapes);
  EXPECT_TRUE(application.after->card.fixed_shapes);
  // Left: the padding (its list of sizes, now constants) and the topk; no size arithmetic.
  for (const auto& added : application.change.added) {
    EXPECT_TRUE(added.op == "aten::constant_pad_nd" || added.op == "aten::topk" ||
                added.op == "prim::ListConstruct")
        << added.op;
  }
  EXPECT_EQ(cpuFallbacks(*application.after, profile), cpuFallbacks(*model, profile));
  // Applied to its own output, its condition turns every topk down: it is idempotent.
  EXPECT_EQ(idempotenceProblem(application, profile), std::nullopt);
}

TEST(AdapterEngine, RotateHalfAsAnArangeBuiltPermutationMatmulIsComputedOnce) {
  // llama-hd64 splits head_dim 64 at 32 for rotate_half, mid-stick. An agent's adapter writes
  // rotate_half as x @ P with P the signed permutation, built with arange and comparisons: on
  // every forward that would be arange on the CPU and comparisons on the device, so it is
  // folded into one constant. The pattern is spelled as exported graphs and traces spell it.
  const auto model = load("llama-hd64");
  const DeviceProfile profile = loadProfile("spyre-2026");
  AdapterFile adapter =
      rewriteFor("rotate-half-matmul", R"(def pattern(x: Tensor, half1: int, half2: int):
    x1 = torch.ops.aten.slice.Tensor(x, 3, 0, half1, 1)
    x2 = torch.slice(x, 3, half2, 9223372036854775807)
    return torch.cat([torch.neg(x2), x1], -1)


def replacement(x: Tensor, half1: int, half2: int):
    d = x.size(-1)
    h = d // 2
    i = torch.arange(d)
    rows = i.unsqueeze(1)
    cols = i.unsqueeze(0)
    p = (rows + h == cols).to(x.dtype) - (rows == cols + h).to(x.dtype)
    return torch.matmul(x, p.to(torch.float32))
)");
  // As if reviewed (shipped, or accepted into the catalog): its constants are computed in this
  // process. The topk test above folds a draft's, in a worker.
  adapter.reviewed = true;
  ASSERT_GT(blockersWithRule(*model, profile, "rope-head-dim"), 0);
  const auto application = applyAdapter(adapter, model, profile);
  ASSERT_TRUE(application.accepted())
      << unchangedReason(application) << application.equivalence.problem();
  EXPECT_EQ(blockersWithRule(*application.after, profile, "rope-head-dim"), 0);
  EXPECT_EQ(countOps(*application.after, "aten::arange"), countOps(*model, "aten::arange"));
  EXPECT_EQ(countOps(*application.after, "aten::eq"), countOps(*model, "aten::eq"));
  // What remains of each replacement is the product with the folded permutation.
  for (const auto& added : application.change.added) EXPECT_EQ(added.op, "aten::matmul");
  EXPECT_GT(application.change.folded, 0);
  EXPECT_TRUE(application.change.fixes_shapes);
  EXPECT_EQ(cpuFallbacks(*application.after, profile), cpuFallbacks(*model, profile));
  // A signed permutation moves values without rounding them: float64 agrees exactly, so the
  // folded float32 matrix entered the float64 run as the float64 matrix it stands for.
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(application.equivalence.agreement.float64_ratio, 0.0);
  EXPECT_EQ(idempotenceProblem(application, profile), std::nullopt);
}

TEST(AdapterEngine, PatternsSpellOperatorsAndDtypesAsPythonAndExportedGraphsDo) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  // The traced llama's attention softmax takes dtype=torch.float32 as the constant 6: the
  // pattern writes it as Python does, the replacement spells its operator as exported graphs do.
  const auto llama = load("llama-tiny");
  const auto softmax = applyAdapter(rewriteFor("softmax-f32", R"(def pattern(x: Tensor):
    return torch.softmax(x, -1, dtype=torch.float32)


def replacement(x: Tensor):
    return torch.ops.aten.softmax.int(x.to(torch.float32), -1, None)
)"),
                                    llama, profile);
  EXPECT_TRUE(softmax.accepted()) << unchangedReason(softmax) << softmax.equivalence.problem();
  EXPECT_EQ(softmax.change.rewrites, countOps(*llama, "aten::softmax"));

  const auto compileError = [](const std::string& functions) -> std::string {
    try {
      validateAdapter(rewriteFor("bad", functions));
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  const std::string kReplacement = "\n\n\ndef replacement(x: Tensor):\n    return x\n";
  // An overload the operator does not have, and arguments that call another overload.
  EXPECT_NE(compileError("def pattern(x: Tensor):\n    return torch.ops.aten.mul.Tensr(x, x)" +
                         kReplacement)
                .find("bad.py:10:12: TorchScript: aten::mul has no overload 'Tensr' (it has: "),
            std::string::npos);
  EXPECT_NE(compileError("def pattern(x: Tensor):\n    return torch.ops.aten.mul.Scalar(x, x)" +
                         kReplacement)
                .find("these arguments call aten::mul.Tensor, not .Scalar"),
            std::string::npos);
  EXPECT_NE(
      compileError("def pattern(x: Tensor):\n    return torch.nn.functional.relu(x)" + kReplacement)
          .find("torch.nn is not available in adapter code: write the aten operator"),
      std::string::npos);
  EXPECT_NE(compileError("def pattern(x: Tensor):\n    return torch.ops.prim.min(x)" + kReplacement)
                .find("adapter code may use torch.ops.aten only, not torch.ops.prim"),
            std::string::npos);
  // Several values returned: one replacement value each, the first computed last.
  EXPECT_NE(compileError("def pattern(x: Tensor):\n    v, i = torch.topk(x, 2)\n    return v, i" +
                         kReplacement)
                .find("bad.py:14:1: the replacement returns 1 value(s) and the pattern 2"),
            std::string::npos)
      << compileError("def pattern(x: Tensor):\n    v, i = torch.topk(x, 2)\n    return v, i" +
                      kReplacement);
  EXPECT_NE(
      compileError("def pattern(x: Tensor):\n    y = torch.neg(x)\n    return y, torch.exp(y)" +
                   kReplacement)
          .find("the pattern's value 1 is not computed on the way to its first"),
      std::string::npos);
}

// A size read downstream of a table looked up at integer indices (embed_positions[position_ids])
// is fixed by the card: the lookup's shape is the indices' shape, whatever their values. Behind a
// boolean mask the shape is the data's, and nothing folds.
TEST(AdapterEngine, SizesFoldAcrossAnIntegerIndexButNotABooleanMask) {
  const AdapterFile doubling = rewriteFor("scale-by-width", R"(def pattern(x: Tensor):
    return torch.mul(x, 2.0)


def replacement(x: Tensor):
    return x * (float(x.size(-1)) / 32.0)
)");
  const char* card = R"({"inputs": [
      {"name": "x", "shape": [32, 64], "dtype": "float32", "kind": "float"},
      {"name": "ids", "shape": [1, 16], "dtype": "int64", "kind": "token_ids", "vocab_size": 32}]})";
  const std::shared_ptr<const LoadedModel> looked_up = loadModel(testing::writeScriptedModel(
      "IndexThenScale", "def forward(self, x, ids):\n    return torch.mul(x[ids], 2.0)\n", card));
  const auto folded = applyAdapter(doubling, looked_up, loadProfile("spyre-2026"));
  ASSERT_TRUE(folded.accepted()) << unchangedReason(folded) << folded.equivalence.problem();
  EXPECT_GT(folded.change.folded, 0);
  EXPECT_TRUE(folded.change.fixes_shapes);
  EXPECT_EQ(countOps(*folded.after, "aten::size"), 0);

  const std::shared_ptr<const LoadedModel> masked = loadModel(testing::writeScriptedModel(
      "MaskThenScale", "def forward(self, x, ids):\n    return torch.mul(x[x > 0.0], 2.0)\n",
      card));
  // Its size is the count of positive values: the rewrite is not the same mathematics there
  // (the equivalence check says so), and its size is read on every run, not folded.
  const auto kept = applyAdapter(doubling, masked, loadProfile("spyre-2026"),
                                 /*check_equivalence=*/false);
  ASSERT_TRUE(kept.changed()) << unchangedReason(kept);
  EXPECT_EQ(kept.change.folded, 0);
  EXPECT_FALSE(kept.change.fixes_shapes);
  EXPECT_GT(countOps(*kept.after, "aten::size"), 0);
  // And it says why, naming the operator upstream that makes the shape the data's.
  ASSERT_EQ(kept.change.not_folded.size(), 1u);
  EXPECT_NE(kept.change.not_folded[0].find("aten::size in the model's forward reads a shape the "
                                           "model card does not fix: aten::index"),
            std::string::npos)
      << kept.change.not_folded[0];
  EXPECT_NE(kept.change.not_folded[0].find("boolean mask"), std::string::npos);
  EXPECT_TRUE(folded.change.not_folded.empty());

  // repeat_interleave by an int (GPT-J's sin and cos, 2 apiece) has a fixed shape; by a tensor
  // of repeats, the data's.
  const auto repeated = applyAdapter(
      doubling,
      loadModel(testing::writeScriptedModel(
          "RepeatThenScale",
          "def forward(self, x, ids):\n    return torch.mul(torch.repeat_interleave(x, 2, 0), "
          "2.0)\n",
          card)),
      loadProfile("spyre-2026"), /*check_equivalence=*/false);
  EXPECT_GT(repeated.change.folded, 0);
  EXPECT_TRUE(repeated.change.not_folded.empty());
}

// A matrix a replacement builds from sizes folds into a constant, and the layout rule judges it
// as it judges the same matrix computed on every run (lowering_test has that side): by its
// output size, whatever produced it.
TEST(AdapterEngine, AFoldedMatrixIsJudgedAsTheSameMatrixComputedAtRunTime) {
  const AdapterFile scale = rewriteFor("scale-as-matmul", R"(def pattern(x: Tensor):
    return torch.mul(x, 2.0)


def replacement(x: Tensor):
    return torch.matmul(x, torch.eye(x.size(-1)) * 2.0)
)");
  const DeviceProfile profile = loadProfile("spyre-2026");
  for (const int64_t width : {48, 64}) {
    const std::string size = std::to_string(width);
    const std::shared_ptr<const LoadedModel> model = loadModel(testing::writeScriptedModel(
        "ScaleWidth" + size, "def forward(self, x):\n    return torch.mul(x, 2.0) + 1.0\n",
        R"({"inputs": [{"name": "x", "shape": [4, )" + size +
            R"(], "dtype": "float32", "kind": "float"}]})"));
    const auto folded = applyAdapter(scale, model, profile);
    ASSERT_TRUE(folded.accepted()) << unchangedReason(folded) << folded.equivalence.problem();
    EXPECT_GT(folded.change.folded, 0);
    EXPECT_EQ(countOps(*folded.after, "aten::eye"), 0);
    EXPECT_EQ(blockersWithRule(*folded.after, profile, "weight-stick-alignment"),
              width == 64 ? 0 : 1)
        << size;
  }
}

TEST(AdapterEngine, APatternMatchesInsideControlFlowWhereItsConstantsArePooledOutside) {
  // TorchScript pools constants at the top of the graph: the 2 of a pow inside an if lives
  // outside the if's block, and a match may not span blocks.
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::writeScriptedModel(
      "PowInsideIf",
      "def forward(self, x):\n    if bool(x.sum() > 0.0):\n        y = torch.pow(x, 2)\n"
      "    else:\n        y = x * 3.0\n    return y + 1.0\n",
      R"({"inputs": [{"name": "x", "shape": [4, 64], "dtype": "float32", "kind": "float"}]})"));
  const auto application =
      applyAdapter(shipped("pow-square-as-mul"), model, loadProfile("spyre-2025-clean"));
  ASSERT_TRUE(application.accepted())
      << unchangedReason(application) << application.equivalence.problem();
  EXPECT_EQ(application.change.rewrites, 1);
  EXPECT_EQ(countOps(*application.after, "aten::pow"), 0);
}

// Results on independent paths from a shared value (one sin/cos split applied to q and to k)
// are not one pattern, as docs/adapter-format.md ("One path") says; the way round it gives
// works: the pattern for one application, the shared values its parameters, matches both.
TEST(AdapterEngine, APatternForOneOfTwoApplicationsOfASharedSplitMatchesBoth) {
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::writeScriptedModel(
      "SharedSplit",
      "def forward(self, q, k, table):\n    sin, cos = torch.split(table, 16, -1)\n"
      "    return q * cos + torch.flip(q, [-1]) * sin, k * cos + torch.flip(k, [-1]) * sin\n",
      R"({"inputs": [{"name": "q", "shape": [1, 4, 16], "dtype": "float32", "kind": "float"},
                     {"name": "k", "shape": [1, 4, 16], "dtype": "float32", "kind": "float"},
                     {"name": "table", "shape": [1, 4, 32], "dtype": "float32", "kind": "float"}]})"));
  try {
    compileRewrite(rewriteFor("both", R"(def pattern(q: Tensor, k: Tensor, table: Tensor):
    sin, cos = torch.split(table, 16, -1)
    return q * cos + torch.flip(q, [-1]) * sin, k * cos + torch.flip(k, [-1]) * sin


def replacement(q: Tensor, k: Tensor, table: Tensor):
    sin, cos = torch.split(table, 16, -1)
    return cos * q + torch.flip(q, [-1]) * sin, cos * k + torch.flip(k, [-1]) * sin
)"));
    FAIL() << "two results on independent paths compiled as one pattern";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is not computed on the way to its first"),
              std::string::npos)
        << e.what();
  }
  const auto application =
      applyAdapter(rewriteFor("one", R"(def pattern(x: Tensor, sin: Tensor, cos: Tensor):
    return x * cos + torch.flip(x, [-1]) * sin


def replacement(x: Tensor, sin: Tensor, cos: Tensor):
    return cos * x + torch.flip(x, [-1]) * sin
)"),
                   model, loadProfile("spyre-2026"));
  ASSERT_TRUE(application.accepted())
      << unchangedReason(application) << application.equivalence.problem();
  EXPECT_EQ(application.change.rewrites, 2);  // the query's and the key's
}

TEST(AdapterEngine, ANoMatchSaysWhichResultOfAMultiOutputOperatorThePatternLeftOut) {
  const auto application =
      applyAdapter(rewriteFor("topk-values", R"(def pattern(x: Tensor):
    return torch.topk(x, 2)[0]


def replacement(x: Tensor):
    return torch.topk(x, 2)[0]
)"),
                   load("mixtral-tiny"), loadProfile("spyre-2026"), /*check_equivalence=*/false);
  EXPECT_FALSE(application.changed());
  const std::string reason = unchangedReason(application);
  EXPECT_NE(reason.find("result 1 of aten::topk in model.layers.0.block_sparse_moe is read by"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("the pattern does not return it"), std::string::npos) << reason;

  // An intermediate value read elsewhere: q is transposed once and read by RoPE's mul and by
  // rotate_half (its size and slices), so a pattern through it cannot take the mul alone.
  const auto shared = applyAdapter(rewriteFor("transpose-mul", R"(def pattern(x: Tensor, c: Tensor):
    return torch.transpose(x, 1, 2) * c


def replacement(x: Tensor, c: Tensor):
    return c * torch.transpose(x, 1, 2)
)"),
                                   load("llama-tiny"), loadProfile("spyre-2026"),
                                   /*check_equivalence=*/false);
  const std::string outside = unchangedReason(shared);
  EXPECT_NE(outside.find("the result of aten::transpose in model.layers.0.self_attn is also read "
                         "outside the match, by aten::size"),
            std::string::npos)
      << outside;

  // A candidate inside a conditional's body, whose dtype the graph computes there.
  const auto in_if = applyAdapter(rewriteFor("softmax-f32", R"(def pattern(x: Tensor, dim: int):
    return torch.softmax(x, dim, dtype=torch.float32)


def replacement(x: Tensor, dim: int):
    return torch.softmax(x.to(torch.float32), dim)
)"),
                                  load("mixtral-tiny"), loadProfile("spyre-2026"),
                                  /*check_equivalence=*/false);
  const std::string computed = unchangedReason(in_if);
  EXPECT_NE(computed.find("(inside a prim::If/prim::Loop block)"), std::string::npos) << computed;
  EXPECT_NE(computed.find("the graph computes it (prim::unchecked_cast): make it a parameter"),
            std::string::npos)
      << computed;
}

TEST(AdapterEngine, VocabularyPaddingFollowsThePerCoreSpanRule) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  // FACTS.md: 151936 -> 2374 sticks = 2 x 1187 overflows the span at hidden 4096 in fp16;
  // 2375 = 5^3 x 19 fits.
  EXPECT_EQ(paddedOutputSize(151936, 4096, profile), 2375 * 64);
  EXPECT_EQ(paddedOutputSize(50257, 768, profile), 786 * 64);  // whole sticks only
  EXPECT_EQ(paddedOutputSize(1024, 64, profile), 1024);        // nothing to pad

  const auto model = load("gpt2-tiny");
  const auto application = applyAdapter(shipped("pad-logits-to-sticks"), model, profile);
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(application.equivalence.modules, std::vector<std::string>{"lm_head"});
  EXPECT_EQ(application.change.rewrites, 1);
  EXPECT_EQ(blockersWithRule(*model, profile, "weight-stick-alignment"), 1);
  EXPECT_EQ(blockersWithRule(*application.after, profile, "weight-stick-alignment"), 0);
  for (const auto& added : application.change.added) EXPECT_EQ(added.module, "lm_head");
  // The logits keep their size: the padding is sliced off.
  EXPECT_TRUE(flattenTensors(application.after->example_outputs)[0].sizes().equals(
      flattenTensors(model->example_outputs)[0].sizes()));
}

// pad_to_sticks finds projections by what their outputs become, not by their names: the logits
// the model returns (GPT-2's head tied to the token embedding; Granite's scaled by a divisor
// first; GPT-NeoX's called embed_out) and the expert scores top-k chooses from (Mixtral's routers,
// whose softmax inlines as a scripted branch). Each role leaves the other's projections alone.
TEST(AdapterEngine, ProjectionsArePaddedByWhatTheirOutputsBecome) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  const auto padded = [&](const std::string& model, const std::string& role) {
    const auto application = applyAdapter(transformAdapter("pad_to_sticks(role=\"" + role + "\")"),
                                          load(model), profile);
    EXPECT_TRUE(!application.changed() || application.accepted())
        << model << application.equivalence.problem();
    std::set<std::string> modules;
    for (const auto& added : application.change.added) modules.insert(added.module);
    return modules;
  };
  using Modules = std::set<std::string>;
  EXPECT_EQ(padded("gpt2-odd-vocab", "logits"), Modules{"lm_head"});
  EXPECT_EQ(padded("granite-hd80", "logits"), Modules{"lm_head"});
  EXPECT_EQ(padded("mixtral-tiny", "logits"), Modules{"lm_head"});
  EXPECT_EQ(padded("pythia-tiny", "logits"), Modules{"embed_out"});  // GPT-NeoX's name
  const Modules routers = {"model.layers.0.block_sparse_moe.gate",
                           "model.layers.1.block_sparse_moe.gate"};
  EXPECT_EQ(padded("mixtral-tiny", "router"), routers);
  Modules both = routers;
  both.insert("lm_head");
  EXPECT_EQ(padded("mixtral-tiny", "logits|router"), both);
  // A model without a router has nothing to pad for that role: not applicable.
  EXPECT_TRUE(padded("llama-tiny", "router").empty());
  EXPECT_THROW(
      {
        try {
          applyAdapter(transformAdapter("pad_to_sticks(role=\"classifier\")"), load("llama-tiny"),
                       profile);
        } catch (const UserError& e) {
          EXPECT_NE(std::string(e.what()).find("unknown role 'classifier' (roles: any, logits, "
                                               "router"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      UserError);
}

// Partial rotary (Phi: the first rotary_ndims values of each head turn, the rest pass through)
// cuts each head twice inside a stick. Each rotated half and the pass-through part are padded to
// whole sticks, the rotary/pass-through cut moves to the padded rotated width, and the model
// computes the same sums: at Phi-1.5's fraction (half of heads of 64) and Phi-2's (0.4 of heads
// of 80).
TEST(AdapterEngine, PartialRotaryIsPaddedHalfByHalfWithItsPassThrough) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  for (const char* name : {"phi-tiny", "phi-hd80"}) {
    SCOPED_TRACE(name);
    const auto model = load(name);
    ASSERT_GT(blockersWithRule(*model, profile, "rope-head-dim"), 0);
    const auto application = applyAdapter(shipped("pad-attention-heads"), model, profile);
    ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
    EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
    EXPECT_EQ(blockersWithRule(*application.after, profile, "rope-head-dim"), 0);
    EXPECT_EQ(blockersWithRule(*application.after, profile, "stick-misaligned-offset"), 0);
    // What is left is sizes other adapters pad: the vocabulary, phi-hd80's hidden size of 160.
    for (const auto& blocker : countBlockers(*application.after, profile)) {
      EXPECT_EQ(blocker.rule, "weight-stick-alignment") << blocker.module;
    }
    // 16 + 16 rotated, 32 or 48 passed through: three sticks per head.
    int cuts = 0;
    for (const auto* node : allNodes(*application.after->graph)) {
      if (node->kind() == torch::jit::aten::linear &&
          modulePathOf(*node) == "model.layers.0.self_attn.q_proj") {
        EXPECT_EQ(application.after->records.at(node).outputs.at(0).shape.back(), 2 * 192);
      }
      if (node->kind() == torch::jit::aten::slice &&
          modulePathOf(*node) == "model.layers.0.self_attn") {
        const auto& record = application.after->records.at(node);
        cuts += record.inputs.at(0).shape.back() == 192 && record.outputs.at(0).shape.back() != 192;
      }
    }
    EXPECT_EQ(cuts, 4);  // the rotated and passed parts of queries and keys
  }
}

TEST(AdapterEngine, AttentionHeadsArePaddedForRope) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  const auto model = load("llama-tiny");  // head_dim 32: rotate_half splits inside a stick
  ASSERT_GT(blockersWithRule(*model, profile, "rope-head-dim"), 0);
  const auto application = applyAdapter(shipped("pad-attention-heads"), model, profile);
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(application.change.rewrites, 2);  // one per decoder layer
  EXPECT_EQ(blockersWithRule(*application.after, profile, "rope-head-dim"), 0);
  // Sums with zero terms, reordered: the same mathematics, checked on the attention modules
  // alone (fed what the model really hands them), not on the whole model.
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(application.equivalence.scope, "region");
  EXPECT_EQ(application.equivalence.modules,
            (std::vector<std::string>{"model.layers.0.self_attn", "model.layers.1.self_attn"}));
  EXPECT_LE(application.equivalence.agreement.float64_ratio, 1);
  // Heads of 128 now: the query projections have 4 x 128 outputs, not 4 x 32.
  int projections = 0;
  for (const auto* node : allNodes(*application.after->graph)) {
    if (node->kind() != torch::jit::aten::linear) continue;
    const std::string module = modulePathOf(*node);
    if (module.size() < 6 || module.substr(module.size() - 6) != "q_proj") continue;
    EXPECT_EQ(application.after->records.at(node).inputs.at(1).shape.at(0), 4 * 128) << module;
    ++projections;
  }
  EXPECT_EQ(projections, 2);  // the query projections of both layers
}

TEST(AdapterEngine, AHeadSizeThatCannotHoldTheHeadIsRefused) {
  const AdapterFile file =
      transformAdapter(R"(pad_attention_heads(module="*.self_attn", head_dim=96))");
  try {
    applyAdapter(file, load("llama-tiny"), loadProfile("spyre-2026"));
    FAIL() << "head_dim 96 (a stick and a half per half) was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of two sticks"), std::string::npos) << e.what();
  }
}

// Attention whose heads already fill sticks has nothing to pad: the adapter does not apply
// there (not applicable, never refused), whatever its projections are called, and a model
// whose only other softmax is a router's is not taken for attention.
TEST(AdapterEngine, HeadPaddingWithNothingToPadIsNotApplicableNotRefused) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  // 2 heads of 32 (BERT's self.query ... output.dense; MPNet's q ... o); heads of 128 under
  // RoPE; T5's 64-value heads without RoPE.
  for (const char* name : {"bert-tiny", "mpnet-tiny", "qwen2-hd128", "t5-encoder-dkv64"}) {
    const auto aligned = applyAdapter(shipped("pad-attention-heads"), load(name), profile);
    EXPECT_FALSE(aligned.changed()) << name;
    EXPECT_FALSE(unchangedReason(aligned).empty()) << name;
  }
}

// The transform's arguments are the modules and the head size: projections are found, not
// named, and an adapter that still names them is told so.
TEST(AdapterEngine, HeadPaddingNamesNoProjections) {
  try {
    validateAdapter(
        transformAdapter(R"(pad_attention_heads(module="*.attention", q="self.query"))"));
    FAIL() << "an argument naming the query projection was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("has no argument 'q' (it takes module, head_dim)"),
              std::string::npos)
        << e.what();
  }
}

// The MLP found by what it computes, gated (Llama's gate_proj, up_proj, down_proj, SiLU; Phi-3's
// fused gate_up_proj) and ungated (BERT's intermediate.dense, GELU, output.dense): its
// intermediate size is padded to whole sticks, the same mathematics. Attention's output
// projection, the logits projection and MLPs already in whole sticks are not MLPs to pad.
TEST(AdapterEngine, IntermediateSizeIsPaddedInGatedAndUngatedMlps) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  const struct {
    const char* model;
    const char* down;  // the down projection's module
    int64_t padded;
    int rewrites;        // MLPs padded
    const char* within;  // a glob of where no misaligned weight is left (the hidden size aside)
  } cases[] = {
      {"llama-ffn352", "model.layers.0.mlp.down_proj", 384, 1, "*"},
      {"bert-ffn200", "encoder.layer.0.output.dense", 256, 1, "*"},
      // Scripted: the dropout between relu and wo inlines as a branch per `inplace`.
      {"t5-encoder-hd96-ff200", "encoder.block.0.layer.1.DenseReluDense.wo", 256, 1,
       "*.DenseReluDense.*"},
      // Scripted: each expert is called in its branch, its SiLU a branch per `inplace`
      // (silu or silu_). Hidden 96 (w2's output) is left to pad-hidden-size.
      {"mixtral-h96", "model.layers.0.block_sparse_moe.experts.0.w2", 192, 2, "*.experts.*.w[13]"},
      // Phi-3's gate and up projections in one gate_up_proj, chunked in two: each half padded.
      {"phi4-mini-tiny", "model.layers.0.mlp.down_proj", 256, 1, "*.mlp.*"}};
  for (const auto& c : cases) {
    const auto model = load(c.model);
    ASSERT_GT(blockersWithRule(*model, profile, "weight-stick-alignment"), 0) << c.model;
    const auto application = applyAdapter(shipped("pad-intermediate-size"), model, profile);
    ASSERT_TRUE(application.accepted()) << c.model << application.equivalence.problem();
    EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
    EXPECT_EQ(application.change.rewrites, c.rewrites) << c.model;
    for (const auto& blocker : countBlockers(*application.after, profile)) {
      if (!globMatch(c.within, blocker.module)) continue;
      EXPECT_NE(blocker.rule, "weight-stick-alignment") << c.model << " " << blocker.module;
    }
    bool seen = false;
    for (const auto* node : allNodes(*application.after->graph)) {
      if (node->kind() != torch::jit::aten::linear || modulePathOf(*node) != c.down) continue;
      EXPECT_EQ(application.after->records.at(node).inputs.at(1).shape.at(1), c.padded);
      seen = true;
    }
    EXPECT_TRUE(seen) << c.down;
  }
  for (const char* aligned : {"llama-tiny", "bert-tiny", "gpt2-tiny"}) {
    EXPECT_FALSE(applyAdapter(shipped("pad-intermediate-size"), load(aligned), profile).changed())
        << aligned;
  }
}

// A pointwise operator whose operands are sticked on different dimensions is found by their
// layouts, whatever the model calls them: ConvNeXt's residual add of the MLP permuted back to
// NCHW, and T5's position bias permuted to [heads, query, key] and added to the scores.
TEST(AdapterEngine, MixedStickOperandsAreRestickified) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  const struct {
    const char* model;
    const char* where;  // a glob of the operators' modules
    int rewrites;       // operands copied
  } cases[] = {{"convnext-tiny", "encoder.stages.*.layers.0", 2},
               {"t5-encoder-tiny", "encoder.block.*.layer.0.SelfAttention", 2}};
  for (const auto& c : cases) {
    const auto model = load(c.model);
    ASSERT_GT(blockersWithRule(*model, profile, "stick-mismatch"), 0) << c.model;
    const auto application = applyAdapter(shipped("restickify-mixed-operands"), model, profile);
    ASSERT_TRUE(application.accepted()) << c.model << application.equivalence.problem();
    EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
    EXPECT_EQ(application.change.rewrites, c.rewrites) << c.model;
    EXPECT_EQ(blockersWithRule(*application.after, profile, "stick-mismatch"), 0) << c.model;
    int copies = 0;
    for (const auto* node : allNodes(*application.after->graph)) {
      if (node->kind() != torch::jit::aten::contiguous ||
          !isBinaryPointwise(node->output()->uses().at(0).user->kind().toQualString())) {
        continue;
      }
      EXPECT_TRUE(globMatch(c.where, modulePathOf(*node))) << c.model << " " << modulePathOf(*node);
      ++copies;
    }
    EXPECT_GE(copies, c.rewrites) << c.model;
  }
  // Channels-last all the way (the norm permutes around nn.LayerNorm), or no permute at all.
  for (const char* agreeing : {"convnext-permuted-norm", "vit-tiny", "llama-tiny"}) {
    EXPECT_FALSE(
        applyAdapter(shipped("restickify-mixed-operands"), load(agreeing), profile).changed())
        << agreeing;
  }
  // The Mamba mixer's chunked scan mixes layouts; once the mixer runs on the host, whose
  // float32 kernels take any layout, there is nothing left to copy.
  const auto bamba = load("bamba-tiny");
  EXPECT_TRUE(applyAdapter(shipped("restickify-mixed-operands"), bamba, profile).changed());
  const auto hosted = applyAdapter(shipped("mamba-mixer-on-host"), bamba, profile);
  ASSERT_TRUE(hosted.accepted());
  EXPECT_FALSE(applyAdapter(shipped("restickify-mixed-operands"), hosted.after, profile).changed());
}

TEST(AdapterEngine, ModulesRunOnTheHostWithoutAGraphChange) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  const auto model = load("bamba-tiny");
  const auto application = applyAdapter(shipped("mamba-mixer-on-host"), model, profile);
  ASSERT_TRUE(application.accepted());
  // The graph computes the same node for node: there is nothing to run.
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kUnchanged);
  EXPECT_EQ(application.change.placed_on_host, std::vector<std::string>{"model.layers.0.mamba"});
  EXPECT_TRUE(application.change.added.empty());
  EXPECT_EQ(opSequence(*application.after), opSequence(*model));
  // The mixer's blockers are gone; the attention layer's pow and RoPE blockers are not.
  EXPECT_EQ(blockersWithRule(*application.after, profile, "stick-misaligned-offset"), 0);
  int mixer_blockers = 0;
  for (const auto& blocker : countBlockers(*application.after, profile)) {
    mixer_blockers += blocker.module.find(".mamba") != std::string::npos;
  }
  EXPECT_EQ(mixer_blockers, 0);
  EXPECT_GT(blockersWithRule(*application.after, profile, "rope-head-dim"), 0);
  // A TorchScript archive cannot carry the placement: saving says so instead of losing it.
  EXPECT_THROW(saveAdaptedArchive(*application.after, {"mamba-mixer-on-host"},
                                  testing::uniqueTempPath("bamba.pt")),
               UserError);
}

TEST(AdapterEngine, HiddenSizePaddingKeepsRmsNormStatistics) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  // Granite-style: hidden 160 = 2 heads x 80, so the heads are padded first (80 -> 128).
  auto heads = applyAdapter(shipped("pad-attention-heads"), load("granite-hd80"), profile);
  ASSERT_TRUE(heads.accepted()) << heads.equivalence.problem();
  ASSERT_GT(blockersWithRule(*heads.after, profile, "weight-stick-alignment"), 0);
  const int means = countOps(*heads.after, "aten::mean");
  ASSERT_GT(means, 0);
  const auto hidden = applyAdapter(shipped("pad-hidden-size"), heads.after, profile);
  ASSERT_TRUE(hidden.accepted()) << hidden.equivalence.problem();
  EXPECT_EQ(hidden.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  // Only lm_head's vocabulary (1000, another adapter's gap) is left unaligned.
  for (const auto& blocker : countBlockers(*hidden.after, profile)) {
    if (blocker.rule == "weight-stick-alignment") {
      EXPECT_EQ(blocker.module, "lm_head");
    }
  }
  EXPECT_EQ(blockersWithRule(*hidden.after, profile, "weight-stick-alignment"), 1);
  // Every RMSNorm variance is now a sum over 192 divided by 160.
  EXPECT_EQ(countOps(*hidden.after, "aten::mean"), 0);
  EXPECT_EQ(countOps(*hidden.after, "aten::sum") - countOps(*heads.after, "aten::sum"), means);
}

TEST(AdapterEngine, HiddenSizePaddingDecomposesLayerNormOverTheRealSize) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  // BERT with hidden 96 = 3 heads x 32: the heads are padded to 64 first (3 x 64 fills whole
  // sticks), then the hidden size to 128.
  auto heads = applyAdapter(shipped("pad-attention-heads"), load("bert-h96"), profile);
  ASSERT_TRUE(heads.accepted()) << heads.equivalence.problem();
  // Zeros added to every sum: the same mathematics (whether the float32 sums also come out
  // bitwise equal depends on how the BLAS library blocks them, so that is not asserted).
  EXPECT_EQ(heads.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  const int norms = countOps(*heads.after, "aten::layer_norm");
  ASSERT_EQ(norms, 3);
  const auto hidden = applyAdapter(shipped("pad-hidden-size"), heads.after, profile);
  ASSERT_TRUE(hidden.accepted()) << hidden.equivalence.problem();
  // Layer norms over the real size, sums reordered: the same mathematics, no worse in float32.
  EXPECT_EQ(hidden.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_LE(hidden.equivalence.agreement.float32_factor, kFloat32Factor);
  EXPECT_EQ(countOps(*hidden.after, "aten::layer_norm"), 0);
  EXPECT_EQ(blockersWithRule(*hidden.after, profile, "weight-stick-alignment"), 0);
  // Each norm's statistics: two sums, each divided by the real size, 96.
  EXPECT_EQ(countOps(*hidden.after, "aten::sum") - countOps(*heads.after, "aten::sum"), 2 * norms);
  int rsqrt_in_norms = 0;
  for (const auto& node : hidden.change.added) {
    rsqrt_in_norms +=
        node.op == "aten::rsqrt" && node.module.find("LayerNorm") != std::string::npos;
  }
  EXPECT_EQ(rsqrt_in_norms, norms);
}

TEST(AdapterEngine, HeadsWithoutRopeArePaddedOnlyWhenTheyDoNotFillSticks) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  // bert-tiny: 2 heads of 32 fill one stick together; nothing to do.
  EXPECT_FALSE(applyAdapter(shipped("pad-attention-heads"), load("bert-tiny"), profile).changed());
  const auto vit = applyAdapter(shipped("pad-attention-heads"), load("vit-h96"), profile);
  ASSERT_TRUE(vit.accepted()) << vit.equivalence.problem();
  EXPECT_EQ(vit.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  // With the heads in whole sticks, padding the hidden size clears every alignment blocker
  // (the hidden size of an image model is read from its first layer_norm).
  const auto hidden = applyAdapter(shipped("pad-hidden-size"), vit.after, profile);
  ASSERT_TRUE(hidden.accepted()) << hidden.equivalence.problem();
  EXPECT_EQ(blockersWithRule(*hidden.after, profile, "weight-stick-alignment"), 0);
}

// ConvNeXt-tiny's 96 channels: the hidden size is the channels of an NCHW image. The stem,
// the depthwise convolution (its groups follow the padded weight), the linears and the layer
// scale are padded; the channels-first norm's statistics over dimension 1 count the real
// channels only, and its centered value is masked so the padding stays zero.
TEST(AdapterEngine, HiddenChannelsOfAConvolutionalEncoderArePadded) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  const auto model = load("convnext-h96");
  ASSERT_GT(blockersWithRule(*model, profile, "weight-stick-alignment"), 0);
  const auto hidden = applyAdapter(shipped("pad-hidden-size"), model, profile);
  ASSERT_TRUE(hidden.accepted()) << hidden.equivalence.problem();
  // Had the padded channels counted in a mean or a variance, every normalized value would move
  // far beyond float64 rounding.
  EXPECT_EQ(hidden.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(blockersWithRule(*hidden.after, profile, "weight-stick-alignment"), 0);
  // The first stage's depthwise convolution is padded; the second's 192 channels, three
  // sticks, are left as they are.
  std::map<std::string, int64_t> groups;
  for (const auto* node : allNodes(*hidden.after->graph)) {
    if (node->kind() != torch::jit::aten::_convolution) continue;
    const std::string module = modulePathOf(*node);
    if (module.find("dwconv") == std::string::npos) continue;
    groups[module] = torch::jit::toIValue(node->input(8))->toInt();
    EXPECT_EQ(hidden.after->records.at(node).inputs.at(1).shape.at(0), groups[module]);
  }
  EXPECT_EQ(groups, (std::map<std::string, int64_t>{{"encoder.stages.0.layers.0.dwconv", 128},
                                                    {"encoder.stages.1.layers.0.dwconv", 192}}));
}

TEST(AdapterEngine, FusedQkvHeadsArePaddedAndTheScaleKeepsTheRealHeadSize) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  // gpt2-h80: one head of 80 in a fused c_attn of 240 outputs, split at 80 and 160.
  const auto model = load("gpt2-h80");
  ASSERT_GT(blockersWithRule(*model, profile, "stick-misaligned-offset"), 0);
  const auto heads = applyAdapter(shipped("pad-attention-heads"), model, profile);
  ASSERT_TRUE(heads.accepted()) << heads.equivalence.problem();
  // The same mathematics: had the scale been read from the padded heads (sqrt 128, not
  // sqrt 80), every score would have changed, far beyond float64 rounding.
  EXPECT_EQ(heads.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(heads.change.rewrites, 3);  // one per layer
  EXPECT_EQ(blockersWithRule(*heads.after, profile, "stick-misaligned-offset"), 0);
  const auto hidden = applyAdapter(shipped("pad-hidden-size"), heads.after, profile);
  ASSERT_TRUE(hidden.accepted()) << hidden.equivalence.problem();
  // Only lm_head's vocabulary (997, another adapter's gap) is left unaligned.
  for (const auto& blocker : countBlockers(*hidden.after, profile)) {
    if (blocker.rule == "weight-stick-alignment") {
      EXPECT_EQ(blocker.module, "lm_head");
    }
  }
}

// Runs `model` compiled for `backend` on its example inputs and returns its first output.
at::Tensor deviceOutput(const LoadedModel& model, const std::string& backend) {
  const auto compiled = makeBackend(parseBackendSpec(backend))->compile(model, {});
  EXPECT_TRUE(compiled->ok()) << backend;
  const BackendRun run = compiled->run(model.example_inputs, {});
  EXPECT_EQ(run.status, BackendRun::Status::kCompleted) << run.message;
  return flattenTensors(run.outputs).at(0);
}

int64_t nans(const at::Tensor& tensor) {
  return at::isnan(tensor).sum().item<int64_t>();
}

double cosine(const at::Tensor& a, const at::Tensor& b) {
  const auto x = a.to(at::kDouble).reshape({-1});
  const auto y = b.to(at::kDouble).reshape({-1});
  return ((x * y).sum() / (x.norm() * y.norm())).item<double>();
}

TEST(AdapterEngine, DecomposingLayerNormAvoidsAFusedKernelFault) {
  // The test profile's fused add + layer_norm kernel returns NaN above 0.5; the decomposed
  // norm is means, products and rsqrt, which that kernel never sees.
  const std::string backend = "spyre-sim:" + testing::testProfile("layernorm-after-add.json");
  const auto model = load("vit-tiny");
  ASSERT_GT(nans(deviceOutput(*model, backend)), 0);
  const std::string text = R"(name = "decompose-layer-norm"
gap = "the fused add + layer_norm kernel returns NaN"
why = "the same mean and variance, computed by separate kernels"
models = ["*"]
profiles = ["test-layernorm-after-add"]
remove_when = "the fused kernel is fixed"
max_ulps = 16
transform = decompose_op(op="aten::layer_norm")
)";
  const auto application = applyAdapter(parseAdapterFile(text, "decompose-layer-norm.py"), model,
                                        loadProfile("spyre-2026"));
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  // The sums are reordered: the same mathematics, checked on the norms alone.
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(application.equivalence.scope, "region");
  const int norms = countOps(*model, "aten::layer_norm");
  EXPECT_EQ(application.change.rewrites, norms);
  EXPECT_EQ(countOps(*application.after, "aten::layer_norm"), 0);
  for (const auto& node : application.change.added) {
    EXPECT_NE(node.module.find("layernorm"), std::string::npos) << node.op << " in " << node.module;
  }
  const at::Tensor output = deviceOutput(*application.after, backend);
  EXPECT_EQ(nans(output), 0);
  EXPECT_GT(cosine(output, flattenTensors(model->example_outputs).at(0)), 0.999);
}

TEST(AdapterEngine, GeluAndSiluDecomposeWithinTheirBound) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  for (const auto& [model_name, op] : std::vector<std::pair<std::string, std::string>>{
           {"bert-tiny", "aten::gelu"}, {"llama-tiny", "aten::silu"}}) {
    const auto model = load(model_name);
    const int nodes = countOps(*model, op);
    ASSERT_GT(nodes, 0) << model_name;
    const auto application =
        applyAdapter(transformAdapter("decompose_op(op=\"" + op + "\")", 16), model, profile);
    ASSERT_TRUE(application.accepted()) << op << ": " << application.equivalence.problem();
    EXPECT_EQ(application.change.rewrites, nodes) << op;
    EXPECT_EQ(countOps(*application.after, op), 0) << op;
    EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent) << op;
  }
}

TEST(AdapterEngine, DecomposeOpRefusesOperatorsItCannotDecompose) {
  const AdapterFile file = transformAdapter(R"(decompose_op(op="aten::softmax"))");
  try {
    applyAdapter(file, load("vit-tiny"), loadProfile("spyre-2026"));
    FAIL() << "softmax was decomposed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no decomposition for aten::softmax"), std::string::npos)
        << e.what();
  }
}

TEST(AdapterEngine, MasksBuiltOnTheHostNeverOverflowOnTheDevice) {
  // bert-tiny builds its additive mask as (1 - mask) * finfo(float32).min: on the device that
  // is 0 * -inf, NaN, for every kept position. Built on the host in fp32, only the finished
  // mask crosses, and the kept positions are exact zeros.
  const std::string backend = "spyre-sim:spyre-2025-clean";
  const auto model = load("bert-tiny");
  ASSERT_GT(nans(deviceOutput(*model, backend)), 0);
  const std::string text = R"(name = "attention-mask-on-host"
gap = "finfo(float32).min overflows 16-bit formats"
why = "the host computes the mask in fp32, as the model does"
models = ["*"]
profiles = ["spyre-2025-clean"]
remove_when = "never"
transform = build_masks_on_host(input="attention_mask")
)";
  const auto application = applyAdapter(parseAdapterFile(text, "attention-mask-on-host.py"), model,
                                        loadProfile("spyre-2025-clean"));
  ASSERT_TRUE(application.accepted());
  // The graph is the same; only placement moved.
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kUnchanged);
  EXPECT_EQ(opSequence(*application.after), opSequence(*model));
  std::set<std::string> hosted;
  for (const auto& node : application.change.nodes_on_host) hosted.insert(node.op);
  EXPECT_TRUE(hosted.count("aten::rsub") && hosted.count("aten::mul")) << hosted.size();
  EXPECT_FALSE(hosted.count("aten::add"));  // scores + mask reads activations: the device's
  EXPECT_EQ(countPlacedOnHost(*application.after->graph),
            static_cast<int64_t>(application.change.nodes_on_host.size()));
  const at::Tensor output = deviceOutput(*application.after, backend);
  EXPECT_EQ(nans(output), 0);
  EXPECT_GT(cosine(output, flattenTensors(model->example_outputs).at(0)), 0.99);
  // A TorchScript archive cannot carry the placement, so saving refuses.
  EXPECT_THROW(saveAdaptedArchive(*application.after, {"attention-mask-on-host"},
                                  testing::uniqueTempPath("bert-mask.pt")),
               UserError);
  // An input the model does not have is named with the ones it has.
  try {
    applyAdapter(parseAdapterFile(std::string(text).replace(text.find("attention_mask\")"), 16,
                                                            "pixel_values\")"),
                                  "attention-mask-on-host.py"),
                 model, loadProfile("spyre-2025-clean"));
    FAIL() << "no input matched, yet nothing was said";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("attention_mask"), std::string::npos) << e.what();
  }
}

TEST(AdapterEngine, RotaryTablesArePrecomputedOnTheHost) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  const auto model = load("qwen2-hd128");
  ASSERT_GT(countOps(*model, "aten::cos"), 0);
  const auto application = applyAdapter(shipped("precompute-rotary-tables"), model, profile);
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(countOps(*application.after, "aten::cos"), 0);
  EXPECT_EQ(countOps(*application.after, "aten::sin"), 0);
  EXPECT_EQ(application.change.rewrites, 2);  // cos and sin of the one rotary module
  // Each table keeps the float64 values the module computes in float64, so the adapted model
  // in float64 reads exactly what the original computes there: the same kernels on the same
  // values, on any machine.
  int twins = 0;
  for (const auto* node : allNodes(*application.after->graph)) {
    twins += node->kind() == torch::jit::prim::Constant && hasFloat64Twin(*node);
  }
  EXPECT_EQ(twins, 2);
  EXPECT_EQ(application.equivalence.verdict, EquivalenceResult::Verdict::kEquivalent);
  EXPECT_EQ(application.equivalence.agreement.float64_difference, 0);
  // Only the rotary module runs: the positions' arange, left without readers at the model's
  // level, is not a change (and a node the edit created at the address of a destroyed copy is
  // not taken for that copy).
  EXPECT_EQ(application.equivalence.modules,
            std::vector<std::string>{"model.layers.0.self_attn.rotary_emb"});
}

TEST(AdapterEngine, ModulesThatReadInputValuesAreNotPrecomputed) {
  const auto application = applyAdapter(transformAdapter(R"(precompute_tables(module="*.mlp"))"),
                                        load("llama-tiny"), loadProfile("spyre-2026"));
  EXPECT_FALSE(application.changed());
}

TEST(AdapterEngine, TransformArgumentsAreChecked) {
  const std::string text = R"(name = "pad-it"
gap = "g"
why = "w"
models = ["*"]
profiles = ["spyre-2026"]
remove_when = "r"
transform = pad_to_sticks(modules="lm_head")
)";
  const AdapterFile file = parseAdapterFile(text, "pad-it.py");
  try {
    applyAdapter(file, load("gpt2-tiny"), loadProfile("spyre-2026"));
    FAIL() << "a misspelled argument was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("pad-it.py:7:13: pad_to_sticks has no argument 'modules'"),
              std::string::npos)
        << e.what();
  }
}

TEST(AdapterEngine, RevertRestoresTheExactPreviousGraph) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  AdapterStack stack(load("gpt2-tiny"));
  const std::string original_graph = stack.current()->graph->toString();
  for (const char* name : {"pow-cube-as-mul", "pad-logits-to-sticks"}) {
    auto application = applyAdapter(shipped(name), stack.current(), profile);
    ASSERT_TRUE(application.accepted()) << name;
    stack.push(std::move(application));
  }
  const auto both = stack.current();
  EXPECT_NE(both->graph->toString(), original_graph);
  // Taking off the first re-applies the second on the original.
  const auto removed = stack.revert("pow-cube-as-mul", profile);
  EXPECT_EQ(removed.adapter.metadata.name, "pow-cube-as-mul");
  ASSERT_EQ(stack.applied().size(), 1u);
  EXPECT_EQ(stack.applied()[0].adapter.metadata.name, "pad-logits-to-sticks");
  EXPECT_GT(countOps(*stack.current(), "aten::pow"), 0);
  stack.revert("", profile);
  EXPECT_EQ(stack.current(), stack.original());
  EXPECT_EQ(stack.current()->graph->toString(), original_graph);
  EXPECT_THROW(stack.revert("", profile), UserError);
}

TEST(AdapterEngine, AnAdaptedArchiveLoadsAndComputesTheSame) {
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  auto model = load("gpt2-tiny");
  for (const char* name : {"pow-cube-as-mul", "pad-logits-to-sticks"}) {
    auto application = applyAdapter(shipped(name), model, profile);
    ASSERT_TRUE(application.accepted());
    model = application.after;
  }
  const std::string out = testing::uniqueTempPath("gpt2-tiny-adapted.pt");
  saveAdaptedArchive(*model, {"pow-cube-as-mul", "pad-logits-to-sticks"}, out);
  const auto saved = loadModel(out);
  EXPECT_EQ(saved->card.name, "gpt2-tiny");
  // The pows left are the attention scale's, on a shape value computed on the host.
  EXPECT_EQ(countOps(*saved, "aten::pow"), countOps(*model, "aten::pow"));
  EXPECT_EQ(blockersWithRule(*saved, profile, "unsupported-op"), 0);
  EXPECT_EQ(blockersWithRule(*saved, profile, "weight-stick-alignment"), 0);
  const auto result = checkWholeModel(*model, *saved);
  EXPECT_TRUE(result.accepted()) << result.problem();
  // Its operators keep their module paths, node for node (weight reads aside: a weight an
  // adapter changed is a constant of the saved forward).
  const auto operatorPaths = [](const LoadedModel& of) {
    std::vector<std::string> paths;
    for (const auto* node : allNodes(*of.graph)) {
      if (node->kind() != torch::jit::prim::Constant && node->kind() != torch::jit::prim::GetAttr) {
        paths.push_back(std::string(node->kind().toQualString()) + " " + modulePathOf(*node));
      }
    }
    return paths;
  };
  const std::vector<std::string> paths_before = operatorPaths(*model);
  const std::vector<std::string> paths_after = operatorPaths(*saved);
  EXPECT_EQ(paths_after, paths_before);
  EXPECT_EQ(saved->interpreter->moduleCalls().size(), model->interpreter->moduleCalls().size());
  // Tied weights (GPT-2's lm_head is its token embedding) stay tied, and weights the adapters
  // did not change are stored once: the archive is no larger than the original and the padded
  // vocabulary projection.
  EXPECT_EQ(saved->unique_parameters, model->unique_parameters);
  const auto original_bytes = std::filesystem::file_size(zooPath("gpt2-tiny.pt"));
  EXPECT_LT(std::filesystem::file_size(out), original_bytes + original_bytes / 2)
      << "weights stored twice";
  std::remove(out.c_str());
}

// A catalog's files are read again only when they changed, and an edit is always seen: an
// in-place rewrite of the same size within the kernel's clock tick at once (a file changed in
// the last two seconds is not kept), and one to a file kept since.
TEST(AdapterCatalog, AnEditedFileIsReadAgainEvenWhenItsSizeIsTheSame) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "stickler-catalog-edits";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "pow-square-as-mul.py";
  const std::string shipped = readTextFile(shippedCatalogDir() + "/pow-square-as-mul.py");
  auto write = [&](const std::string& why) {
    std::string text = shipped;
    const size_t at = text.find("why = \"");
    text.replace(at, text.find('\n', at) - at, "why = \"" + why + "\"");
    std::ofstream out(file, std::ios::trunc);  // the same inode, rewritten
    out << text;
  };
  auto whyRead = [&] {
    const auto catalog = readCatalogDir(dir.string(), "workspace");
    EXPECT_EQ(catalog.size(), 1u);
    EXPECT_EQ(catalog.at(0).error, "");
    return catalog.empty() || !catalog[0].file ? "" : catalog[0].file->metadata.why;
  };
  write("first");
  EXPECT_EQ(whyRead(), "first");
  write("again");  // same size, within the same tick
  EXPECT_EQ(whyRead(), "again");
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_EQ(whyRead(), "again");  // now kept
  write("later");
  EXPECT_EQ(whyRead(), "later");
  fs::remove(file);
  EXPECT_TRUE(readCatalogDir(dir.string(), "workspace").empty());
  fs::remove_all(dir);
}

// Every zoo model adapted for spyre-2026 by the catalog and saved keeps its operators' module
// paths when loaded again, although a save and load drops some nodes (a tuple built and
// unpacked at once): none of its operators falls to the root.
TEST(AdapterEngine, EverySavedAdaptedZooModelKeepsItsModulePaths) {
  const DeviceProfile profile = loadProfile("spyre-2026");
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const auto operatorPaths = [](const torch::jit::Graph& graph) {
    std::multiset<std::string> paths;
    for (const auto* node : allNodes(graph)) {
      if (node->kind() != torch::jit::prim::Constant && node->kind() != torch::jit::prim::GetAttr) {
        paths.insert(std::string(node->kind().toQualString()) + " " + modulePathOf(*node));
      }
    }
    return paths;
  };
  int saved_models = 0, changed_graphs = 0;
  for (const std::string& name : testing::zooModelNames()) {
    AdapterStack stack(load(name));
    stackAdapters(stack, adaptersMeantFor(catalog, *stack.original(), &profile), profile,
                  StackingChecks::kUnchecked);
    const auto adapted = stack.current();
    const std::string out = testing::uniqueTempPath(name + "-adapted.pt");
    try {
      saveAdaptedArchive(*adapted, stack.names(), out);
    } catch (const UserError&) {
      continue;  // placed on the host: refused with the reason (tested above)
    }
    ++saved_models;
    const auto saved = loadModel(out);
    std::remove(out.c_str());
    // What the adapted model computes: its graph without the nodes an adapter left unused
    // (rotary frequencies a folded table replaced), which saving drops.
    const auto live = adapted->graph->copy();
    torch::jit::EliminateDeadCode(live);
    const auto before = operatorPaths(*live);
    const auto after = operatorPaths(*saved->graph);
    changed_graphs += before.size() != after.size();
    // What the load gives back is what was saved, module for module.
    EXPECT_TRUE(std::includes(before.begin(), before.end(), after.begin(), after.end())) << name;
    // The modules that compute (weight reads aside: a weight an adapter changed is a constant
    // of the saved forward, so a module that only reads one is gone).
    const auto modulesOf = [](const std::multiset<std::string>& paths) {
      std::set<std::string> modules;
      for (const std::string& path : paths) modules.insert(path.substr(path.find(' ') + 1));
      return modules;
    };
    const auto modules_before = modulesOf(before), modules_after = modulesOf(after);
    std::vector<std::string> lost, gained;
    std::set_difference(modules_before.begin(), modules_before.end(), modules_after.begin(),
                        modules_after.end(), std::back_inserter(lost));
    std::set_difference(modules_after.begin(), modules_after.end(), modules_before.begin(),
                        modules_before.end(), std::back_inserter(gained));
    // A module may go whose operators all computed on constants (a folded rotary table's
    // casts), which the load folds in turn; none appears, and no operator moves to the root.
    EXPECT_TRUE(gained.empty()) << name << ": gained " << nlohmann::json(gained).dump();
    EXPECT_LE(lost.size() * 5, modules_before.size())
        << name << ": lost " << nlohmann::json(lost).dump();
    const auto atRoot = [](const std::multiset<std::string>& paths) {
      return std::count_if(paths.begin(), paths.end(),
                           [](const std::string& path) { return path.back() == ' '; });
    };
    EXPECT_LE(atRoot(after), atRoot(before)) << name;
  }
  EXPECT_GE(saved_models, 10);
  EXPECT_GT(changed_graphs, 0);  // the round trip did drop nodes somewhere: the case this is for
}

// A record of module paths that cannot be the graph's is an error that names the archive, not
// a model whose nodes all sit at the root.
TEST(AdapterEngine, AModulePathRecordThatDoesNotFitIsAnError) {
  const auto model = load("gpt2-tiny");
  auto graph = model->graph->copy();
  EXPECT_THROW(restoreModulePaths(*graph, "not json"), UserError);
  EXPECT_THROW(restoreModulePaths(*graph, R"({"version": 2, "scopes": [], "nodes": []})"),
               UserError);
  nlohmann::json other = {{"version", 1},
                          {"scopes", nlohmann::json::array({nlohmann::json::array({"h", -1})})},
                          {"nodes", nlohmann::json::array()}};
  for (int i = 0; i < 200; ++i) other["nodes"].push_back(nlohmann::json::array({"aten::cos", 0}));
  try {
    restoreModulePaths(*graph, other.dump());
    FAIL() << "a record of 200 cosines fitted gpt2-tiny";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit its graph"), std::string::npos) << e.what();
  }
  // A decode graph's record is its own, under `methods`: checked as the forward's is, and
  // nothing restored for a method that has none.
  nlohmann::json with_methods = {{"version", 1},
                                 {"scopes", nlohmann::json::array()},
                                 {"nodes", nlohmann::json::array()},
                                 {"methods", {{"prefill", other}}}};
  EXPECT_THROW(restoreModulePaths(*graph, with_methods.dump(), "prefill"), UserError);
  EXPECT_NO_THROW(restoreModulePaths(*graph, with_methods.dump(), "decode_step"));
  with_methods["methods"] = "prefill";
  EXPECT_THROW(restoreModulePaths(*graph, with_methods.dump(), "prefill"), UserError);
}

// One file with a number out of range is listed with its error; it does not take the catalog's
// listing down with it.
TEST(AdapterEngine, AnOutOfRangeNumberIsTheCatalogEntrysError) {
  const std::string text =
      "name = \"x\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\nprofiles = [\"spyre-2026\"]\n"
      "remove_when = \"r\"\nmax_ulps = 1e999\ntransform = pad_to_sticks(module=\"lm_head\")\n";
  const CatalogEntry entry = catalogEntryFromText("x", text, "x.py", "workspace");
  EXPECT_FALSE((entry.file != nullptr));
  EXPECT_EQ(entry.error, "x.py:7:12: '1e999' is not a finite number Stickler can read");
}

// A file's parse is kept while its text is the same: an edited file is parsed again, and what
// depends on where it comes from (reviewed or not) is not taken from the kept parse.
TEST(AdapterEngine, ACatalogFileEditedInPlaceIsParsedAgain) {
  auto text = [](int max_ulps) {
    return "name = \"x\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
           "profiles = [\"spyre-2026\"]\nremove_when = \"r\"\nmax_ulps = " +
           std::to_string(max_ulps) + "\ntransform = pad_to_sticks(module=\"lm_head\")\n";
  };
  const CatalogEntry first = catalogEntryFromText("x", text(4), "x.py", "workspace");
  ASSERT_TRUE((first.file != nullptr)) << first.error;
  EXPECT_EQ(first.file->metadata.max_ulps, 4);
  EXPECT_TRUE(first.file->reviewed);
  const CatalogEntry edited = catalogEntryFromText("x", text(8), "x.py", "workspace");
  EXPECT_EQ(edited.file->metadata.max_ulps, 8);
  // The text's digest, with which a session finds the model it adapted, is the edited text's.
  EXPECT_EQ(first.file->source_sha256, sha256Bytes(text(4)));
  EXPECT_EQ(edited.file->source_sha256, sha256Bytes(text(8)));
  const CatalogEntry draft = catalogEntryFromText("x", text(4), "x.py", "draft");
  EXPECT_EQ(draft.file->metadata.max_ulps, 4);
  EXPECT_FALSE(draft.file->reviewed);
  const CatalogEntry broken = catalogEntryFromText("x", text(4) + "(", "x.py", "workspace");
  EXPECT_FALSE((broken.file != nullptr));
  EXPECT_FALSE(broken.error.empty());
}

TEST(AdapterEngine, MatchingNamesTheBlockersEachAdapterClears) {
  const auto catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const auto matches = matchAdapters(catalog, load("gpt2-tiny"), loadProfile("spyre-2025-clean"));
  std::map<std::string, AdapterMatch> by_name;
  for (const auto& match : matches) by_name[match.name] = match;
  ASSERT_TRUE(by_name.count("pow-cube-as-mul"));
  const AdapterMatch& cube = by_name["pow-cube-as-mul"];
  EXPECT_TRUE(cube.applies);
  ASSERT_FALSE(cube.clears.empty());
  EXPECT_EQ(cube.clears[0].rule, "unsupported-op");
  EXPECT_EQ(cube.clears[0].op, "aten::pow");
  EXPECT_NE(cube.clears[0].module.find("mlp.act"), std::string::npos);
  EXPECT_FALSE(by_name["pow-square-as-mul"].applies);  // gpt2 squares nothing
  EXPECT_FALSE(by_name["restickify-mixed-operands"].applies);
}

TEST(AdapterEngine, UlpDistance) {
  EXPECT_EQ(ulpDistance(1.0f, 1.0f), 0);
  EXPECT_EQ(ulpDistance(0.0f, -0.0f), 0);
  EXPECT_EQ(ulpDistance(1.0f, std::nextafter(1.0f, 2.0f)), 1);
  EXPECT_EQ(ulpDistance(-1.0f, std::nextafter(-1.0f, -2.0f)), 1);
  EXPECT_EQ(ulpDistance(std::nextafter(0.0f, -1.0f), std::nextafter(0.0f, 1.0f)), 2);
  EXPECT_GT(ulpDistance(1.0f, std::nanf("")), 1000000);
}

// The tools against a workspace of the test's own.
class WorkspaceContext : public OperationContext {
 public:
  explicit WorkspaceContext(std::string root) : root_(std::move(root)) {}
  std::string workspaceRoot() override { return root_; }

 private:
  std::string root_;
};

std::string freshWorkspace() {
  std::string pattern = ::testing::TempDir() + "stickler-ws-XXXXXX";
  return mkdtemp(pattern.data());
}

std::string gitLog(const std::string& dir) {
  const std::string command =
      "git -C " + dir + " log --all --format='%s|%(trailers:only,unfold)' 2>&1";
  std::string text;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe)) text += buffer;
  pclose(pipe);
  return text;
}

TEST(AdapterTools, DraftRevertAndEvidenceCommitsInTheWorkspaceCatalog) {
  const std::string root = freshWorkspace();
  WorkspaceContext context(root);
  const Operation& draft = operationNamed("draft_adapter");
  const Operation& apply = operationNamed("apply_adapter");

  // A syntax error is reported with its line and column; nothing is written.
  try {
    runOperation(draft, {{"name", "cube-as-square"}, {"source", "name = (\n"}, {"reason", "r"}},
                 context);
    FAIL() << "a syntax error was drafted";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cube-as-square.py:1:8:", 0), 0) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(root + "/stickler-adapters"));

  const json drafted = runOperation(
      draft, {{"name", "cube-as-square"}, {"source", kCubeAsSquare}, {"reason", "Try squaring"}},
      context);
  EXPECT_TRUE(drafted["committed"].get<bool>());
  EXPECT_EQ(drafted["branch"], "draft/cube-as-square");
  const json refused = runOperation(apply,
                                    {{"model", zooPath("gpt2-tiny.pt")},
                                     {"adapter", "cube-as-square"},
                                     {"profile", "spyre-2025-clean"}},
                                    context);
  EXPECT_EQ(refused["status"], "refused");
  EXPECT_EQ(apply.exit_status(refused), ExitStatus::kFailed);
  runOperation(draft,
               {{"name", "cube-as-square"},
                {"revert", true},
                {"reason", "Refused by the equivalence check"}},
               context);

  const json applied = runOperation(apply,
                                    {{"model", zooPath("gpt2-tiny.pt")},
                                     {"adapter", "pow-cube-as-mul"},
                                     {"profile", "spyre-2025-clean"}},
                                    context);
  EXPECT_EQ(applied["status"], "applied");
  ASSERT_TRUE(applied.contains("evidence_commit"));

  const std::string log = gitLog(root + "/stickler-adapters");
  EXPECT_NE(log.find("Try squaring|Adapter: cube-as-square"), std::string::npos) << log;
  EXPECT_NE(log.find("Revert \"Try squaring\"|Reverts: "), std::string::npos) << log;
  EXPECT_NE(log.find("Stickler-Action: revert"), std::string::npos) << log;
  EXPECT_NE(log.find("Applied to gpt2-tiny for spyre-2025-clean|Adapter: pow-cube-as-mul"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Evidence: equivalence on the CPU: equivalent (region"), std::string::npos)
      << log;
  std::filesystem::remove_all(root);
}

// A draft is tried on the workspace's archives its `models` names, and where it matches nothing
// the result says so plainly, with the reason (it is committed all the same).
TEST(AdapterTools, ADraftSaysWhereItMatchesNothing) {
  namespace fs = std::filesystem;
  const std::string root = freshWorkspace();
  fs::create_directories(root + "/models/deeper");
  fs::copy_file(zooPath("gpt2-tiny.pt"), root + "/models/gpt2-tiny.pt");
  fs::copy_file(zooPath("llama-tiny.pt"), root + "/models/deeper/llama-tiny.pt");
  fs::create_directories(root + "/stickler-repros");  // Stickler's own: not searched
  fs::copy_file(zooPath("gpt2-tiny.pt"), root + "/stickler-repros/repro.pt");
  std::ofstream(root + "/models/not-a-model.pt") << "junk";
  WorkspaceContext context(root);
  const Operation& draft = operationNamed("draft_adapter");

  // Named for gpt2 only, and its pattern is in no model: one model tried, a plain warning.
  std::string nothing = kCubeAsSquare;
  nothing.replace(nothing.find("name = \"cube-as-square\""), 23, "name = \"pow-seven\"");
  nothing.replace(nothing.find("models = [\"*\"]"), 14, "models = [\"gpt2*\"]");
  nothing.replace(nothing.find("torch.pow(x, 3.0)"), 17, "torch.pow(x, 7.0)");
  json result =
      runOperation(draft, {{"name", "pow-seven"}, {"source", nothing}, {"reason", "r"}}, context);
  EXPECT_TRUE(result["committed"].get<bool>());
  ASSERT_EQ(result["matches"]["tried"].size(), 1u) << result.dump(1);
  EXPECT_EQ(result["matches"]["tried"][0]["model"], "models/gpt2-tiny.pt");
  EXPECT_FALSE(result["matches"]["tried"][0]["matched"].get<bool>());
  ASSERT_EQ(result["warnings"].size(), 2u) << result.dump(1);
  const std::string first = result["warnings"][0];
  EXPECT_EQ(first.rfind("matches nothing in models/gpt2-tiny.pt: ", 0), 0u) << first;
  EXPECT_GT(first.size(), std::string("matches nothing in models/gpt2-tiny.pt: ").size());
  EXPECT_NE(result["warnings"][1].get<std::string>().find("matches none of the 1 model"),
            std::string::npos);
  EXPECT_NE(result["summary"].get<std::string>().find("Warning: matches nothing in"),
            std::string::npos);
  EXPECT_NE(draft.render_text(result).find("warning: matches nothing in models/gpt2-tiny.pt"),
            std::string::npos);

  // For every model, given the one it was written for: that one first, not tried twice; it
  // matches GPT-2's cube (gelu_new) and nothing in Llama, which is said.
  result = runOperation(draft,
                        {{"name", "cube-as-square"},
                         {"source", kCubeAsSquare},
                         {"reason", "r"},
                         {"model", root + "/models/gpt2-tiny.pt"}},
                        context);
  ASSERT_EQ(result["matches"]["tried"].size(), 2u) << result.dump(1);
  EXPECT_TRUE(result["matches"]["tried"][0]["matched"].get<bool>());
  EXPECT_GT(result["matches"]["tried"][0]["rewrites"].get<int64_t>(), 0);
  EXPECT_EQ(result["matches"]["tried"][1]["model"], "models/deeper/llama-tiny.pt");
  EXPECT_FALSE(result["matches"]["tried"][1]["matched"].get<bool>());
  ASSERT_EQ(result["warnings"].size(), 1u) << result.dump(1);
  EXPECT_EQ(result["warnings"][0].get<std::string>().rfind(
                "matches nothing in models/deeper/llama-tiny.pt: ", 0),
            0u);

  // A profile that does not load keeps it from being tried, not from being written.
  std::string later = kCubeAsSquare;
  later.replace(later.find("name = \"cube-as-square\""), 23, "name = \"for-later\"");
  later.replace(later.find("profiles = [\"spyre-2025-clean\"]"), 31, "profiles = [\"spyre-2099\"]");
  result =
      runOperation(draft, {{"name", "for-later"}, {"source", later}, {"reason", "r"}}, context);
  EXPECT_TRUE(result["committed"].get<bool>());
  EXPECT_TRUE(result["matches"]["tried"].empty());
  ASSERT_EQ(result["warnings"].size(), 1u) << result.dump(1);
  EXPECT_EQ(
      result["warnings"][0].get<std::string>().rfind("not tried on the workspace's models: ", 0),
      0u)
      << result["warnings"][0];
  std::filesystem::remove_all(root);
}

TEST(AdapterTools, CatalogHistoryGivesCommitsAndCurrentEvidence) {
  const std::string root = freshWorkspace();
  WorkspaceContext context(root);
  const Operation& history = operationNamed("catalog_history");
  const json apply_input = {{"model", zooPath("gpt2-tiny.pt")},
                            {"adapter", "pow-cube-as-mul"},
                            {"profile", "spyre-2025-clean"}};
  runOperation(operationNamed("init_workspace"), json::object(), context);
  runOperation(operationNamed("apply_adapter"), apply_input, context);

  // Seeded on main, then one evidence commit about it: current, since the text did not change.
  json seen = runOperation(history, {{"adapter", "pow-cube-as-mul"}}, context);
  ASSERT_EQ(seen["commits"].size(), 2u) << seen.dump(1);
  EXPECT_EQ(seen["commits"][0]["action"], "evidence");
  EXPECT_NE(seen["commits"][0]["evidence"][0].get<std::string>().find("equivalence on the CPU"),
            std::string::npos)
      << seen["commits"][0].dump();
  EXPECT_EQ(seen["commits"][1]["action"], "seed");
  EXPECT_EQ(seen["commits"][1]["branch"], "main");
  EXPECT_EQ(seen["evidence_since_last_change"], 1);

  // A new text makes that evidence old; applying the new text records current evidence again.
  std::ifstream in(shippedCatalogDir() + "/pow-cube-as-mul.py");
  std::stringstream text;
  text << in.rdbuf();
  runOperation(operationNamed("draft_adapter"),
               {{"name", "pow-cube-as-mul"},
                {"source", text.str() + "\n# reviewed wording\n"},
                {"reason", "Reword"}},
               context);
  seen = runOperation(history, {{"adapter", "pow-cube-as-mul"}}, context);
  EXPECT_EQ(seen["commits"][0]["action"], "draft");
  EXPECT_EQ(seen["draft_tip"], seen["commits"][0]["id"]);
  EXPECT_EQ(seen["evidence_since_last_change"], 0);
  runOperation(operationNamed("apply_adapter"), apply_input, context);
  seen = runOperation(history, {{"adapter", "pow-cube-as-mul"}, {"limit", 1}}, context);
  EXPECT_EQ(seen["commits"].size(), 1u);
  EXPECT_EQ(seen["total"], 4);
  EXPECT_EQ(seen["evidence_since_last_change"], 1);
  EXPECT_THROW(runOperation(history, {{"adapter", "Not A Name"}}, context), UserError);
  std::filesystem::remove_all(root);
}

// An MCP session's context: models kept loaded, adapter stacks its own.
class SessionContext : public WorkspaceContext {
 public:
  using WorkspaceContext::WorkspaceContext;
  ModelCache* models() override { return &models_; }
  AdapterStacks* adapterStacks() override { return &stacks_; }

 private:
  ModelCache models_;
  AdapterStacks stacks_;
};

// What stacking the catalog on a model gave for a diagnosis (diagnose and localize with adapt)
// is kept by the session: the same model, profile and adapters give the same adapted model
// without stacking again; another profile stacks afresh, and so does a context that is no
// session (the command line).
TEST(AdapterTools, ASessionKeepsTheCatalogsStackingForWhatItDependsOn) {
  const std::string root = freshWorkspace();
  SessionContext session(root);
  const DeviceProfile profile = loadProfile("spyre-2026");
  const DeviceProfile clean = loadProfile("spyre-2026-clean");
  const std::string model = zooPath("bert-tiny.pt");
  json applied = json::array(), again = json::array(), other = json::array();
  const auto first = modelToDiagnose(session, model, {}, &profile, &applied);
  const auto second = modelToDiagnose(session, model, {}, &profile, &again);
  ASSERT_FALSE(applied.empty()) << "bert-tiny needs adapters on spyre-2026";
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(applied, again);
  const auto cleaned = modelToDiagnose(session, model, {}, &clean, &other);
  EXPECT_NE(cleaned.get(), first.get());
  EXPECT_EQ(modelToDiagnose(session, model, {}, &profile, &again).get(), first.get());

  WorkspaceContext command_line(root);
  json ignored = json::array();
  const auto once = modelToDiagnose(command_line, model, {}, &profile, &ignored);
  EXPECT_NE(once.get(), first.get());
  EXPECT_NE(modelToDiagnose(command_line, model, {}, &profile, &ignored).get(), once.get());
  std::filesystem::remove_all(root);
}

TEST(AdapterStacks, KeepsTheMostRecentlyUsedStackingsOnly) {
  AdapterStacks stacks;
  stacks.keepAdaptation("a", {nullptr, {"first"}});
  stacks.keepAdaptation("b", {nullptr, {"second"}});
  ASSERT_TRUE(stacks.adaptation("a"));  // now the most recently used
  stacks.keepAdaptation("c", {nullptr, {"third"}});
  static_assert(AdapterStacks::kAdaptationsKept == 2);
  EXPECT_FALSE(stacks.adaptation("b"));
  ASSERT_TRUE(stacks.adaptation("a"));
  EXPECT_EQ(stacks.adaptation("a")->applied, std::vector<std::string>{"first"});
  EXPECT_EQ(stacks.adaptation("c")->applied, std::vector<std::string>{"third"});
  stacks.keepAdaptation("c", {nullptr, {"replaced"}});
  EXPECT_EQ(stacks.adaptation("c")->applied, std::vector<std::string>{"replaced"});
  EXPECT_TRUE(stacks.adaptation("a"));
}

// Localization on a saved adapted archive finds the culprit it finds on the model adapted in
// memory: the profile's fault, scoped to a module, strikes the saved model's nodes too.
TEST(AdapterTools, LocalizeOnASavedAdaptedArchiveNamesTheSameCulprit) {
  const std::string root = freshWorkspace();
  const std::string culprit = "model.layers.1.mlp.down_proj";
  const std::string profile = testing::wrongScaleProfile(culprit, "spyre-2026");
  WorkspaceContext context(root);
  const std::string saved = root + "/llama-adapted.pt";
  const json adapted = runOperation(
      operationNamed("adapt_model"),
      {{"model", zooPath("llama-tiny.pt")}, {"profile", "spyre-2026"}, {"save", saved}}, context);
  ASSERT_TRUE(std::filesystem::exists(saved)) << adapted.dump().substr(0, 400);
  const Operation& localize = operationNamed("localize_divergence");
  const json in_memory = runOperation(
      localize, {{"model", zooPath("llama-tiny.pt")}, {"profile", profile}, {"adapt", true}},
      context);
  const json from_archive =
      runOperation(localize, {{"model", saved}, {"profile", profile}}, context);
  ASSERT_EQ(in_memory.value("status", ""), "localized") << in_memory.dump().substr(0, 400);
  EXPECT_EQ(in_memory["culprit"]["module"], culprit);
  ASSERT_EQ(from_archive.value("status", ""), "localized") << from_archive.dump().substr(0, 400);
  EXPECT_EQ(from_archive["culprit"]["module"], in_memory["culprit"]["module"]);
  std::filesystem::remove_all(root);
}

json listedAdapter(OperationContext& context, const std::string& name) {
  const json listed = runOperation(operationNamed("list_adapters"), json::object(), context);
  for (const json& adapter : listed["adapters"]) {
    if (adapter["name"] == name) return adapter;
  }
  return nullptr;
}

bool hasBranch(const std::string& repo, const std::string& branch) {
  const std::string command =
      "git -C " + repo + " rev-parse --verify --quiet refs/heads/" + branch + " >/dev/null";
  return std::system(command.c_str()) == 0;
}

TEST(AdapterTools, ListAdaptersLabelsShippedAndDraftsTruthfullyAndKeepsEvidenceApart) {
  const std::string root = freshWorkspace();
  WorkspaceContext context(root);
  const std::string repo = root + "/stickler-adapters";
  runOperation(operationNamed("init_workspace"), json::object(), context);
  json cube = listedAdapter(context, "pow-cube-as-mul");
  EXPECT_EQ(cube["status"], "shipped") << cube.dump();
  EXPECT_EQ(cube["branch"], "main");

  // Applying a shipped adapter records evidence about it, on a branch of its own: no draft.
  const json apply_input = {{"model", zooPath("gpt2-tiny.pt")},
                            {"adapter", "pow-cube-as-mul"},
                            {"profile", "spyre-2025-clean"}};
  const json applied = runOperation(operationNamed("apply_adapter"), apply_input, context);
  ASSERT_TRUE(applied.contains("evidence_commit")) << applied.dump();
  cube = listedAdapter(context, "pow-cube-as-mul");
  EXPECT_EQ(cube["status"], "shipped") << cube.dump();
  EXPECT_EQ(cube["origin"], "workspace");
  EXPECT_EQ(cube["branch"], "main");
  EXPECT_TRUE(hasBranch(repo, "evidence/pow-cube-as-mul"));
  EXPECT_FALSE(hasBranch(repo, "draft/pow-cube-as-mul"));

  // A real draft of it is a draft, on its branch; evidence then goes with the draft.
  std::ifstream in(shippedCatalogDir() + "/pow-cube-as-mul.py");
  std::stringstream text;
  text << in.rdbuf();
  runOperation(operationNamed("draft_adapter"),
               {{"name", "pow-cube-as-mul"},
                {"source", text.str() + "\n# reworded\n"},
                {"reason", "Reword"}},
               context);
  cube = listedAdapter(context, "pow-cube-as-mul");
  EXPECT_EQ(cube["status"], "draft") << cube.dump();
  EXPECT_EQ(cube["branch"], "draft/pow-cube-as-mul");
  const json again = runOperation(operationNamed("apply_adapter"), apply_input, context);
  const json history = runOperation(operationNamed("catalog_history"),
                                    {{"adapter", "pow-cube-as-mul"}, {"limit", 1}}, context);
  EXPECT_EQ(history["commits"][0]["id"], again["evidence_commit"]);
  EXPECT_EQ(history["commits"][0]["branch"], "draft/pow-cube-as-mul");

  // Reverted to main's text, the branch is no draft any more.
  runOperation(operationNamed("draft_adapter"),
               {{"name", "pow-cube-as-mul"}, {"revert", true}, {"reason", "Back"}}, context);
  cube = listedAdapter(context, "pow-cube-as-mul");
  EXPECT_EQ(cube["status"], "shipped") << cube.dump();
  EXPECT_EQ(cube["branch"], "main");

  // A new adapter drafted in the workspace.
  runOperation(operationNamed("draft_adapter"),
               {{"name", "cube-as-square"}, {"source", kCubeAsSquare}, {"reason", "Try"}}, context);
  const json fresh = listedAdapter(context, "cube-as-square");
  EXPECT_EQ(fresh["status"], "draft") << fresh.dump();
  EXPECT_EQ(fresh["branch"], "draft/cube-as-square");

  // Proposed and approved through a review, main's version is accepted.
  WorkspaceCatalog catalog = WorkspaceCatalog::open(repo);
  const auto proposal = catalog.propose("p-1", {"cube-as-square"}, "Cube as square, reviewed");
  const auto plan = catalog.planApproval(proposal.commit);
  catalog.advanceMain(catalog.writeApproval(plan, proposal.commit, "Approve cube-as-square", {}),
                      plan.main);
  const json accepted = listedAdapter(context, "cube-as-square");
  EXPECT_EQ(accepted["status"], "accepted") << accepted.dump();
  EXPECT_EQ(accepted["branch"], "main");
  std::filesystem::remove_all(root);
}

// An agent's fp16-variance adapter for RMSNorm: the mean of squares of the input prescaled by
// 2^-4 and scaled back by 2^8 (powers of two: exact). Written with pow(2), its replacement
// contains its own pattern again; written as a product, it does not.
std::string prescaledMeanOfSquares(const std::string& squared) {
  return "name = \"prescaled-mean-of-squares\"\ngap = \"outlier channels overflow the fp16 "
         "variance\"\nwhy = \"scaling by powers of two is exact\"\nmodels = [\"*\"]\n"
         "profiles = [\"spyre-2026\"]\nremove_when = \"the device accumulates in float32\"\n\n\n"
         "def pattern(x: Tensor):\n    return x.pow(2).mean(-1, keepdim=True)\n\n\n"
         "def replacement(x: Tensor):\n    return torch.mean(" +
         squared + ", -1, keepdim=True) * 256.0\n";
}

TEST(AdapterTools, AnAdapterMustLeaveItsOwnOutputAlone) {
  const std::string root = freshWorkspace();
  WorkspaceContext context(root);
  const Operation& draft = operationNamed("draft_adapter");
  const std::string model = zooPath("llama-tiny.pt");
  const std::string again = prescaledMeanOfSquares("(x * 0.0625).pow(2)");
  // Drafted against a model, the second application's change refuses it; nothing is written.
  try {
    runOperation(draft,
                 {{"name", "prescaled-mean-of-squares"},
                  {"source", again},
                  {"reason", "r"},
                  {"model", model},
                  {"profile", "spyre-2026"}},
                 context);
    FAIL() << "a draft that matches its own output was written";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("not idempotent: applied again to its own output, it changes"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("aten::mean"), std::string::npos) << message;
  }
  EXPECT_FALSE(hasBranch(root + "/stickler-adapters", "draft/prescaled-mean-of-squares"));
  // Drafted without one, apply_adapter refuses it the same way.
  runOperation(draft, {{"name", "prescaled-mean-of-squares"}, {"source", again}, {"reason", "r"}},
               context);
  const json apply_input = {
      {"model", model}, {"adapter", "prescaled-mean-of-squares"}, {"profile", "spyre-2026"}};
  const json refused = runOperation(operationNamed("apply_adapter"), apply_input, context);
  EXPECT_EQ(refused["status"], "refused") << refused.dump();
  EXPECT_EQ(refused["idempotent"], false);
  EXPECT_NE(refused["reason"].get<std::string>().find("not idempotent"), std::string::npos);
  EXPECT_TRUE(refused["applied"].empty());

  // As a product the replacement no longer contains the pattern: drafted, checked, applied.
  const json drafted =
      runOperation(draft,
                   {{"name", "prescaled-mean-of-squares"},
                    {"source", prescaledMeanOfSquares("(x * 0.0625) * (x * 0.0625)")},
                    {"reason", "As a product"},
                    {"model", model},
                    {"profile", "spyre-2026"}},
                   context);
  EXPECT_EQ(drafted["idempotence"]["checked"], true) << drafted.dump();
  const json applied = runOperation(operationNamed("apply_adapter"), apply_input, context);
  EXPECT_EQ(applied["status"], "applied") << applied.dump();
  EXPECT_EQ(applied["idempotent"], true);
  EXPECT_GE(applied["application"]["change"]["rewrites"].get<int>(), 2);
  // Its replacement is products and a mean the device has: no CPU fallback comes with it.
  const DeviceProfile profile = loadProfile("spyre-2026");
  const auto application =
      applyAdapter(parseAdapterFile(prescaledMeanOfSquares("(x * 0.0625) * (x * 0.0625)"),
                                    "prescaled-mean-of-squares.py"),
                   loadModel(model), profile);
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(cpuFallbacks(*application.after, profile), cpuFallbacks(*application.before, profile));
  std::filesystem::remove_all(root);
}

TEST(AdapterTools, DraftsAreRenamedAndDeletedOverTheToolsAndStayAuditable) {
  const std::string root = freshWorkspace();
  WorkspaceContext context(root);
  const std::string repo = root + "/stickler-adapters";
  const Operation& draft = operationNamed("draft_adapter");
  runOperation(draft, {{"name", "cube-as-square"}, {"source", kCubeAsSquare}, {"reason", "Try"}},
               context);
  const json renamed = runOperation(
      draft, {{"name", "cube-as-square"}, {"rename_to", "cube-squared"}, {"reason", "Clearer"}},
      context);
  EXPECT_EQ(renamed["renamed_from"], "cube-as-square");
  EXPECT_EQ(renamed["branch"], "draft/cube-squared");
  EXPECT_EQ(listedAdapter(context, "cube-as-square"), nullptr);
  const json moved = listedAdapter(context, "cube-squared");
  EXPECT_EQ(moved["status"], "draft") << moved.dump();
  EXPECT_FALSE(moved.contains("error")) << moved.dump();  // its name field was rewritten
  EXPECT_TRUE(hasBranch(repo, "deleted/cube-as-square/1"));
  const json history = runOperation(operationNamed("catalog_history"),
                                    {{"adapter", "cube-squared"}, {"limit", 1}}, context);
  const json renamed_from = {{"key", "Renamed-From"}, {"value", "cube-as-square"}};
  const json& trailers = history["commits"][0]["trailers"];
  EXPECT_NE(std::find(trailers.begin(), trailers.end(), renamed_from), trailers.end())
      << history.dump();

  // Onto an adapter main has, or one without a draft: refused, nothing moves.
  EXPECT_THROW(
      runOperation(draft,
                   {{"name", "cube-squared"}, {"rename_to", "pow-cube-as-mul"}, {"reason", "r"}},
                   context),
      UserError);
  EXPECT_THROW(runOperation(draft, {{"name", "pow-cube-as-mul"}, {"delete", true}, {"reason", "r"}},
                            context),
               UserError);
  EXPECT_THROW(
      runOperation(draft,
                   {{"name", "cube-squared"}, {"delete", true}, {"revert", true}, {"reason", "r"}},
                   context),
      UserError);

  const json deleted = runOperation(
      draft, {{"name", "cube-squared"}, {"delete", true}, {"reason", "Refused anyway"}}, context);
  EXPECT_EQ(deleted["branch"], "deleted/cube-squared/1");
  EXPECT_EQ(listedAdapter(context, "cube-squared"), nullptr);
  EXPECT_FALSE(hasBranch(repo, "draft/cube-squared"));
  EXPECT_NE(gitLog(repo).find("Refused anyway|Adapter: cube-squared"), std::string::npos)
      << gitLog(repo);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace stickler
