// The graphs of one archive share its loaded module while any of them lives (shared_modules.h):
// a decoder's forward, prefill and step hold its weights once, the registry never keeps a module
// alive by itself, and another archive, or the same path with other content, is loaded afresh;
// the weights an adapter pads in each graph are held once too (shared_constants.h).
#include "simulator/graph/shared_modules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/decode_adaptation.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/decode_card.h"
#include "simulator/graph/loaded_model.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<LoadedModel> loadGraph(const std::string& path, ModelGraph graph) {
  LoadOptions options;
  options.graph = graph;
  return loadModel(path, options);
}

const void* weightData(const LoadedModel& model) {
  return model.module.attr("lm_head").toModule().attr("weight").toTensor().data_ptr();
}

TEST(SharedModules, TheGraphsOfOneArchiveHoldItsWeightsOnce) {
  const std::string path = testing::zooPath("qwen2-hd128.pt");
  const auto forward = loadGraph(path, ModelGraph::kForward);
  const auto prefill = loadGraph(path, ModelGraph::kPrefill);
  const auto step = loadGraph(path, ModelGraph::kDecodeStep);
  EXPECT_EQ(prefill->module._ivalue().get(), forward->module._ivalue().get());
  EXPECT_EQ(step->module._ivalue().get(), forward->module._ivalue().get());
  EXPECT_EQ(weightData(*step), weightData(*forward));
  // Each has its own graph, of its own method.
  EXPECT_NE(prefill->graph.get(), forward->graph.get());
  EXPECT_EQ(prefill->graph_kind, ModelGraph::kPrefill);
  EXPECT_NE(prefill->graph->inputs().size(), step->graph->inputs().size());
}

TEST(SharedModules, NoModuleOutlivesTheModelsMadeFromIt) {
  const std::string path = testing::zooPath("qwen2-hd128.pt");
  auto forward = loadGraph(path, ModelGraph::kForward);
  const c10::weak_intrusive_ptr<c10::ivalue::Object> weak(forward->module._ivalue());
  ASSERT_FALSE(weak.expired());
  forward.reset();
  EXPECT_TRUE(weak.expired());
  // Loaded again from the file, and usable.
  const auto again = loadGraph(path, ModelGraph::kDecodeStep);
  EXPECT_FALSE(again->example_outputs.empty());
}

TEST(SharedModules, OtherContentAtTheSamePathIsLoadedAfresh) {
  const std::string path = testing::uniqueTempPath("shared-modules") + ".pt";
  fs::copy_file(testing::zooPath("qwen2-hd128.pt"), path, fs::copy_options::overwrite_existing);
  const auto first = loadGraph(path, ModelGraph::kForward);
  fs::copy_file(testing::zooPath("llama-hd64.pt"), path, fs::copy_options::overwrite_existing);
  const auto second = loadGraph(path, ModelGraph::kForward);
  EXPECT_NE(second->sha256, first->sha256);
  EXPECT_NE(second->module._ivalue().get(), first->module._ivalue().get());
  EXPECT_EQ(second->card.name, "llama-hd64");
  fs::remove(path);
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// The tensor constants of at least 64 KiB in a graph, by their data.
std::set<const void*> largeConstants(const LoadedModel& model) {
  std::set<const void*> data;
  for (const torch::jit::Node* node : model.graph->nodes()) {
    if (node->kind() != torch::jit::prim::Constant || node->outputs().size() != 1) continue;
    const auto value = torch::jit::toIValue(node->output());
    if (!value || !value->isTensor() || value->toTensor().nbytes() < 64 * 1024) continue;
    data.insert(value->toTensor().data_ptr());
  }
  return data;
}

// adapt --decode pads the heads of the prefill and the step graph alike: the padded weights
// each makes are equal, and held once (shared_constants.h).
TEST(SharedModules, TheWeightsAnAdapterPadsAreHeldOnceForEveryGraph) {
  const std::vector<CatalogEntry> catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  std::vector<const CatalogEntry*> entries;
  for (const CatalogEntry& entry : catalog) {
    if (entry.name == "pad-attention-heads") entries.push_back(&entry);
  }
  ASSERT_EQ(entries.size(), 1u);
  const DecodeAdaptation adapted =
      adaptDecodeGraphs(testing::zooPath("llama-hd64.pt"), 0, entries, loadProfile("spyre-2026"),
                        /*checked=*/false);
  ASSERT_EQ(adapted.prefill_applied, std::vector<std::string>{"pad-attention-heads"});
  ASSERT_EQ(adapted.step_applied, std::vector<std::string>{"pad-attention-heads"});
  const std::set<const void*> prefill = largeConstants(*adapted.prefill);
  const std::set<const void*> step = largeConstants(*adapted.step);
  ASSERT_FALSE(prefill.empty());  // the padded q, k, v and o weights
  EXPECT_EQ(prefill, step);
}

}  // namespace
}  // namespace stickler
