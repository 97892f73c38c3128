// Loading and inlining: exact module paths, classes, source positions, shapes, hashes.
#include <gtest/gtest.h>

#include <torch/script.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/node_info.h"
#include "simulator/support/errors.h"
#include "simulator/support/large_blocks.h"
#include "simulator/support/sha256.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using testing::zooModel;
using testing::zooPath;

std::unique_ptr<LoadedModel> loadZoo(const std::string& name) {
  return loadModel(zooPath(name + ".pt"));
}

// module path -> aten ops found there
std::map<std::string, std::multiset<std::string>> opsByModule(const LoadedModel& model) {
  std::map<std::string, std::multiset<std::string>> ops;
  for (const torch::jit::Node* node : allNodes(*model.graph)) {
    if (node->kind().is_aten()) ops[modulePathOf(*node)].insert(node->kind().toQualString());
  }
  return ops;
}

class ZooLoading : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooLoading, EveryAtenNodeHasAKnownModuleAndASourceLine) {
  const auto model = loadZoo(GetParam());
  size_t aten = 0;
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (!node->kind().is_aten()) continue;
    ++aten;
    const NodeOrigin origin = originOf(*node, model->modules);
    EXPECT_NE(model->modules.find(origin.module_path), nullptr)
        << node->kind().toQualString() << " has unknown module '" << origin.module_path << "'";
    EXPECT_FALSE(origin.module_class.empty());
    ASSERT_TRUE(origin.code.has_value()) << describeNode(*node, model->modules);
    EXPECT_GT(origin.code->line, 0);
    EXPECT_EQ(origin.code->file.rfind("code/", 0), 0u) << origin.code->file;
  }
  EXPECT_GT(aten, 10u);
}

TEST_P(ZooLoading, NoCallsAreLeftAndShapesAreRecorded) {
  const auto model = loadZoo(GetParam());
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    EXPECT_NE(node->kind(), torch::jit::prim::CallMethod);
    EXPECT_NE(node->kind(), torch::jit::prim::CallFunction);
    if (!node->kind().is_aten()) continue;
    auto record = model->records.find(node);
    if (record == model->records.end()) continue;  // a branch the example did not take
    EXPECT_EQ(record->second.outputs.size(), node->outputs().size());
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      if (node->output(i)->type()->kind() == c10::TypeKind::TensorType) {
        EXPECT_EQ(record->second.outputs[i].kind, "Tensor");
        EXPECT_FALSE(record->second.outputs[i].dtype.empty());
      }
    }
  }
}

TEST_P(ZooLoading, HashAndParametersMatchTheArchive) {
  const auto model = loadZoo(GetParam());
  EXPECT_EQ(model->sha256, sha256File(zooPath(GetParam() + ".pt")));
  EXPECT_EQ(model->unique_parameters, zooModel(GetParam()).at("parameters").get<int64_t>());
  EXPECT_EQ(model->card.name, GetParam());
  EXPECT_TRUE(model->card.from_archive);
}

// A model whose shapes depend on its values: a router's choice of experts (torch.nonzero).
bool routesByValue(const LoadedModel& model) {
  const auto nodes = allNodes(*model.graph);
  return std::any_of(nodes.begin(), nodes.end(), [](const torch::jit::Node* node) {
    return node->kind() == c10::Symbol::fromQualString("aten::nonzero");
  });
}

void expectSameRecords(const LoadedModel& values, const LoadedModel& shapes) {
  const auto expected = allNodes(*values.graph);
  const auto actual = allNodes(*shapes.graph);
  ASSERT_EQ(actual.size(), expected.size());
  // Where shapes follow values, a shapes-only run routes every token to every expert: it sees
  // every node a run sees, with the same kinds, dtypes and ranks, and more tokens.
  const bool routed = routesByValue(values);
  const auto same = [routed](const std::vector<ValueDesc>& a, const std::vector<ValueDesc>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].kind != b[i].kind || a[i].dtype != b[i].dtype ||
          a[i].shape.size() != b[i].shape.size()) {
        return false;
      }
      if (!routed &&
          (a[i].shape != b[i].shape || a[i].strides != b[i].strides || a[i].value != b[i].value)) {
        return false;
      }
    }
    return true;
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto want = values.records.find(expected[i]);
    const auto got = shapes.records.find(actual[i]);
    const std::string where = describeNode(*expected[i], values.modules);
    if (routed && want == values.records.end()) continue;  // an expert no token chose
    ASSERT_EQ(got != shapes.records.end(), want != values.records.end()) << where;
    if (want == values.records.end()) continue;
    if (!routed) {
      EXPECT_EQ(got->second.executions, want->second.executions) << where;
    }
    EXPECT_TRUE(same(got->second.inputs, want->second.inputs)) << where << " inputs";
    EXPECT_TRUE(same(got->second.outputs, want->second.outputs)) << where << " outputs";
  }
}

void expectShapesOnlyLoadRecordsTheSame(const std::string& path) {
  const auto values = loadModel(path);
  LoadOptions options;
  options.shapes_only = true;
  const auto shapes = loadModel(path, options);
  EXPECT_TRUE(shapes->shapes_only);
  EXPECT_THROW(requireWeights(*shapes, "run"), UserError);
  EXPECT_NO_THROW(requireWeights(*values, "run"));
  expectSameRecords(*values, *shapes);
  const auto outputs = flattenTensors(shapes->example_outputs);
  const auto real = flattenTensors(values->example_outputs);
  ASSERT_EQ(outputs.size(), real.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(outputs[i].sizes(), real[i].sizes());
    EXPECT_EQ(outputs[i].scalar_type(), real[i].scalar_type());
  }
  // A model's outputs all come from its weights: none has values.
  EXPECT_TRUE(std::any_of(outputs.begin(), outputs.end(),
                          [](const at::Tensor& tensor) { return tensor.is_meta(); }));
}

// A load's example run frees its large intermediate results as it goes; it gives back the blocks
// it kept of them for reuse, which what follows a load (a check in float64, a model host's run)
// would not ask for, and which would otherwise be held through it.
TEST(ExampleRun, GivesBackTheLargeBlocksItFreed) {
  constexpr int64_t kRows = 1024, kColumns = 2048;  // 8 MiB in float32
  torch::jit::Module module("LargeIntermediates");
  module.register_parameter("w", at::randn({1, kColumns}), false);
  module.define(
      "def forward(self, x):\n"
      "    return torch.relu(torch.matmul(x, self.w)).sum(0)\n");
  const std::string path = testing::uniqueTempPath("large-intermediates.pt");
  module.save(path, {{"stickler/model.json",
                      R"({"inputs": [{"name": "x", "shape": [1024, 1], "dtype": "float32",
                          "kind": "float"}]})"}});
  releaseLargeBlocks();
  resetLargeBlocksLivePeak();
  const size_t before = largeBlocksLive();
  const auto model = loadModel(path);
  // The run made large intermediates (the product and its relu), which it freed...
  EXPECT_GE(largeBlocksLivePeak() - before, static_cast<size_t>(kRows * kColumns) * sizeof(float));
  EXPECT_EQ(largeBlocksLive(), before);  // its one output is a row, not a large tensor
  // ...and kept none of them.
  EXPECT_EQ(largeBlocksKept(), 0u);
  std::remove(path.c_str());
}

// Loaded for its shapes only (inspect, check), a model records what each node sees as a run
// with its weights does: the same shapes, strides, dtypes, scalars and executions.
TEST_P(ZooLoading, ForItsShapesOnlyRecordsWhatARunWithItsWeightsRecords) {
  expectShapesOnlyLoadRecordsTheSame(zooPath(GetParam() + ".pt"));
}

// A router's choices come from values: loaded for its shapes, every expert is seen.
TEST(ShapesOnlyLoad, EveryExpertOfAMixtureIsRecorded) {
  LoadOptions options;
  options.shapes_only = true;
  const auto model = loadModel(zooPath("mixtral-tiny.pt"), options);
  ASSERT_TRUE(routesByValue(*model));
  size_t experts = 0;
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (node->kind() != c10::Symbol::fromQualString("aten::linear")) continue;
    if (modulePathOf(*node).find(".experts.") == std::string::npos) continue;
    ++experts;
    EXPECT_NE(model->records.find(node), model->records.end()) << modulePathOf(*node);
  }
  EXPECT_GT(experts, 0u);
}

// A scripted module of `source` with float32 parameters `weights`, saved with a card whose one
// input is a float32 `x` of `shape`; returns the archive's path.
std::string savedScriptedModel(const std::string& name,
                               const std::vector<std::pair<std::string, at::Tensor>>& weights,
                               const std::string& source, const std::string& shape) {
  torch::jit::Module module(name);
  for (const auto& [weight, value] : weights) module.register_parameter(weight, value, false);
  module.define(source);
  std::string path = testing::uniqueTempPath(name + ".pt");
  module.save(path, {{"stickler/model.json", R"({"inputs": [{"name": "x", "shape": )" + shape +
                                                 R"(, "dtype": "float32", "kind": "float"}]})"}});
  return path;
}

// A model whose shapes follow its weights' values, which shapes alone cannot give: loaded for
// its shapes only, its weights are read after all, and it records what a run records.
TEST(ShapesOnlyLoad, AModelThatNeedsItsWeightsValuesIsLoadedWithThem) {
  const std::string path = savedScriptedModel("SizedByItsWeight", {{"sizes", at::full({4}, 4.0)}},
                                              "def forward(self, x):\n"
                                              "    return x.view(int(self.sizes.sum().item()))\n",
                                              "[4, 4]");
  LoadOptions options;
  options.shapes_only = true;
  const auto model = loadModel(path, options);
  EXPECT_FALSE(model->shapes_only);
  const auto outputs = flattenTensors(model->example_outputs);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].sizes(), c10::IntArrayRef({16}));
  EXPECT_FALSE(outputs[0].is_meta());
  // A model host's load (records from shapes, weights kept) reads them too.
  LoadOptions host;
  host.records_from_shapes = true;
  const auto hosted = loadModel(path, host);
  EXPECT_FALSE(hosted->records_from_shapes);
  EXPECT_FALSE(flattenTensors(hosted->example_outputs).at(0).is_meta());
  std::remove(path.c_str());
}

// Transformers moves values to its inputs' device (`.to(x.device)`, which a trace records with
// the CPU as a constant): a value computed from weights left unread stays on the meta device,
// with the strides a run with the weights gives it (not ones expanded on the CPU).
TEST(ShapesOnlyLoad, AMoveToTheInputsDeviceKeepsAValueOfShapes) {
  const std::string path =
      savedScriptedModel("MovedToItsInputsDevice", {{"scale", at::full({4}, 2.0)}},
                         "def forward(self, x):\n"
                         "    return (x * self.scale).to(x.device) + 1.0\n",
                         "[3, 4]");
  expectShapesOnlyLoadRecordsTheSame(path);
  std::remove(path.c_str());
}

// A model ending in an operator LibTorch gives no meta kernel (layer_norm: ESM-2's
// emb_layer_norm_after) computes it on the CPU from ones in place of its weights: its outputs,
// loaded for its shapes, are still shapes, not values made up of ones.
TEST(ShapesOnlyLoad, OutputsComputedFromOnesAreShapes) {
  const std::string path = savedScriptedModel(
      "EndsInALayerNorm", {{"weight", at::full({4}, 2.0)}, {"bias", at::full({4}, 0.5)}},
      "def forward(self, x):\n"
      "    return torch.layer_norm(x, [4], self.weight, self.bias, 1e-5)\n",
      "[3, 4]");
  expectShapesOnlyLoadRecordsTheSame(path);
  std::remove(path.c_str());
}

TEST(ShapesOnlyLoad, RecordsWhatARunRecordsOnSixteenBitModels) {
  expectShapesOnlyLoadRecordsTheSame(zooPath("../zoo-bfloat16/llama-tiny.pt"));
  expectShapesOnlyLoadRecordsTheSame(zooPath("../zoo-float16/llama-tiny.pt"));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooLoading, ::testing::ValuesIn(testing::zooModelNames()),
                         [](const auto& info) { return testing::testName(info.param); });

TEST(ModulePaths, Gpt2KeepsModuleListLevels) {
  const auto model = loadZoo("gpt2-tiny");
  const auto ops = opsByModule(*model);
  EXPECT_EQ(ops.at("transformer.h.0.attn.c_attn").count("aten::addmm"), 1u);
  EXPECT_EQ(ops.at("transformer.h.1.mlp.act").count("aten::pow"), 1u);
  EXPECT_EQ(ops.at("transformer.h.1.attn").count("aten::where"), 1u);
  EXPECT_EQ(ops.at("lm_head").count("aten::linear"), 1u);
  EXPECT_EQ(ops.count("transformer.0"), 0u);  // what torch::jit::Inline would have produced
  EXPECT_EQ(model->modules.classOf("transformer.h.0.attn"), "GPT2Attention");
  EXPECT_EQ(model->modules.classOf("transformer.h.0.mlp.act"), "NewGELUActivation");
}

TEST(ModulePaths, OriginalPythonLinesAreRecorded) {
  const auto model = loadZoo("gpt2-tiny");
  bool found = false;
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (node->kind() != torch::jit::aten::pow) continue;
    const NodeOrigin origin = originOf(*node, model->modules);
    if (origin.module_class != "NewGELUActivation") continue;
    ASSERT_TRUE(origin.python.has_value());
    EXPECT_NE(origin.python->file.find("common.py"), std::string::npos) << origin.python->file;
    found = true;
  }
  EXPECT_TRUE(found);
}

// A traced node records the whole Python stack; its line is the model's own, not torch's: the
// softmax that nn.functional computes is shown where the attention calls it, and the
// lm_head's linear where the model calls the Linear, never in torch/nn.
TEST(ModulePaths, ThePythonLineIsTheModelsNotTorchs) {
  const auto model = loadZoo("gpt2-tiny");
  std::set<std::string> ops;
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (!node->kind().is_aten()) continue;
    const NodeOrigin origin = originOf(*node, model->modules);
    if (!origin.python) continue;
    EXPECT_EQ(origin.python->file.find("-packages/torch/"), std::string::npos)
        << describeNode(*node, model->modules);
    if (node->kind() == torch::jit::aten::softmax || node->kind() == torch::jit::aten::linear) {
      EXPECT_NE(origin.python->file.find("families/gpt2.py"), std::string::npos)
          << describeNode(*node, model->modules);
      ops.insert(node->kind().toQualString());
    }
  }
  EXPECT_EQ(ops, (std::set<std::string>{"aten::linear", "aten::softmax"}));
}

TEST(ModulePaths, EachFamilyPlacesItsCharacteristicOps) {
  auto llama = opsByModule(*loadZoo("llama-tiny"));
  EXPECT_EQ(llama.at("model.layers.1.self_attn.rotary_emb").count("aten::cos"), 1u);
  EXPECT_EQ(llama.at("model.layers.0.mlp.act_fn").count("aten::silu"), 1u);
  EXPECT_EQ(llama.at("model.layers.0.input_layernorm").count("aten::pow"), 1u);
  EXPECT_EQ(llama.at("model").count("aten::tril"), 1u);

  auto bamba = opsByModule(*loadZoo("bamba-tiny"));
  const auto& mixer = bamba.at("model.layers.0.mamba");
  for (const char* op : {"aten::softplus", "aten::exp", "aten::cumsum", "aten::roll",
                         "aten::slice_scatter", "aten::select_scatter", "aten::copy_"}) {
    EXPECT_GE(mixer.count(op), 1u) << op;
  }
  // F.pad(mode="constant") is traced as aten::pad, which LibTorch decomposes into
  // aten::constant_pad_nd when it runs.
  EXPECT_GE(mixer.count("aten::pad") + mixer.count("aten::constant_pad_nd"), 1u);

  auto t5 = opsByModule(*loadZoo("t5-encoder-tiny"));
  EXPECT_GE(t5.at("encoder.block.0.layer.0.SelfAttention").count("aten::log"), 1u);
  EXPECT_GE(t5.at("encoder.block.0.layer.0.SelfAttention").count("aten::where"), 1u);

  auto mixtral = opsByModule(*loadZoo("mixtral-tiny"));
  EXPECT_GE(mixtral.at("model.layers.1.block_sparse_moe.experts.3.w2").count("aten::linear"), 1u);
  EXPECT_GE(mixtral.at("model.layers.0.block_sparse_moe").count("aten::topk"), 1u);

  auto vit = opsByModule(*loadZoo("vit-tiny"));
  EXPECT_GE(vit.at("embeddings.patch_embeddings.projection").count("aten::_convolution") +
                vit.at("embeddings.patch_embeddings.projection").count("aten::conv2d"),
            1u);
}

TEST(ModulePaths, AModelWithoutACardTakesInputsFromFlags) {
  const auto& foreign = testing::zooIndex().at("foreign").at(0);
  LoadOptions options;
  for (const auto& flag : foreign.at("inputs")) options.inputs.push_back(parseInputFlag(flag));
  const auto model = loadModel(zooPath(foreign.at("file")), options);
  EXPECT_FALSE(model->card.from_archive);
  const auto ops = opsByModule(*model);
  for (const auto& path : foreign.at("expected_paths")) {
    EXPECT_TRUE(ops.count(path)) << "no aten node in " << path;
  }
  EXPECT_EQ(model->modules.classOf("layer1.0"), "BasicBlock");
}

TEST(InputKinds, IntegerInputsFeedingAnEmbeddingBecomeTokenIds) {
  LoadOptions options;
  options.inputs = {parseInputFlag("input_ids:1x8:int64")};
  const auto model = loadModel(zooPath("gpt2-tiny.pt"), options);
  ASSERT_EQ(model->card.inputs.size(), 1u);
  EXPECT_EQ(model->card.inputs[0].kind, InputKind::kTokenIds);
  EXPECT_EQ(model->card.inputs[0].vocab_size, 1000);
  const auto ids = model->example_inputs.at(0).toTensor();
  EXPECT_EQ(ids.sizes().vec(), (std::vector<int64_t>{1, 8}));
  EXPECT_LT(ids.max().item<int64_t>(), 1000);
}

TEST(InputKinds, ExampleInputsAreTheGeneratorsInputs) {
  // The C++ loader draws the same values as tests/zoo/common.py: same generator and seed.
  for (const std::string name : {"bert-tiny", "vit-tiny", "mixtral-tiny"}) {
    const auto model = loadZoo(name);
    const auto& sums = zooModel(name).at("input_sums");
    ASSERT_EQ(model->example_inputs.size(), sums.size()) << name;
    for (size_t i = 0; i < sums.size(); ++i) {
      EXPECT_DOUBLE_EQ(model->example_inputs[i].toTensor().to(torch::kDouble).sum().item<double>(),
                       sums[i].get<double>())
          << name << " input " << i;
    }
  }
}

}  // namespace
}  // namespace stickler
