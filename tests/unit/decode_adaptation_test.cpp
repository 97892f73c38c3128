// The catalog's adapters on a decoder's prefill and step graphs (decode_adaptation.h): the
// prefill's example outputs are the decode's reference, so they are values whether an adapter
// changed the prefill or none did.
#include "adapters/engine/decode_adaptation.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "adapters/engine/adapted_archive.h"
#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_catalog.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/decode_card.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

DecodeAdaptation adaptedWith(const std::vector<CatalogEntry>& catalog, const std::string& name) {
  std::vector<const CatalogEntry*> entries;
  for (const CatalogEntry& entry : catalog) {
    if (entry.name == name) entries.push_back(&entry);
  }
  EXPECT_EQ(entries.size(), 1u) << name;
  return adaptDecodeGraphs(testing::zooPath("llama-hd64.pt"), 0, entries, loadProfile("spyre-2026"),
                           /*checked=*/true);
}

void expectValues(const LoadedModel& model) {
  EXPECT_FALSE(model.records_from_shapes);
  const std::vector<at::Tensor> outputs = flattenTensors(model.example_outputs);
  ASSERT_FALSE(outputs.empty());
  for (const at::Tensor& output : outputs) {
    EXPECT_FALSE(output.is_meta());
    EXPECT_TRUE(output.isfinite().all().item<bool>());
  }
}

TEST(DecodeAdaptation, ThePrefillsOutputsAreValuesWhetherOrNotAnAdapterChangedIt) {
  const std::vector<CatalogEntry> catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  LoadOptions plain;
  plain.graph = ModelGraph::kPrefill;
  const auto loaded = loadModel(testing::zooPath("llama-hd64.pt"), plain);
  const std::vector<at::Tensor> reference = flattenTensors(loaded->example_outputs);

  // Padded heads, checked: the prefill is the adapted graph, which ran its example inputs.
  const DecodeAdaptation padded = adaptedWith(catalog, "pad-attention-heads");
  EXPECT_EQ(padded.prefill_applied, std::vector<std::string>{"pad-attention-heads"});
  EXPECT_EQ(padded.step_applied, std::vector<std::string>{"pad-attention-heads"});
  expectValues(*padded.prefill);

  // An adapter for another family changes nothing: the prefill as loaded, with the outputs of
  // the same computation as a plain load's, in the same process.
  const DecodeAdaptation unchanged = adaptedWith(catalog, "pow-cube-as-mul");
  EXPECT_TRUE(unchanged.prefill_applied.empty());
  EXPECT_TRUE(unchanged.step_applied.empty());
  expectValues(*unchanged.prefill);
  const std::vector<at::Tensor> outputs = flattenTensors(unchanged.prefill->example_outputs);
  ASSERT_EQ(outputs.size(), reference.size());
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_TRUE(outputs[i].equal(reference[i])) << i;
}

std::multiset<std::string> operatorPaths(const torch::jit::Graph& graph) {
  std::multiset<std::string> paths;
  for (const auto* node : allNodes(graph)) {
    if (node->kind() != torch::jit::prim::Constant && node->kind() != torch::jit::prim::GetAttr) {
      paths.insert(std::string(node->kind().toQualString()) + " " + modulePathOf(*node));
    }
  }
  return paths;
}

// adapt --decode --save: the archive's prefill and step are the adapted graphs, each operator
// at its module (a fault that names a path strikes the saved decode as the adapted one), the
// card keeps its decode interface, and each graph computes what the adapted one did.
TEST(DecodeAdaptation, ASavedArchiveKeepsTheAdaptedDecodeGraphsAndTheirModulePaths) {
  const std::vector<CatalogEntry> catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  const DeviceProfile profile = loadProfile("spyre-2026");
  const CatalogEntry* pad = nullptr;
  for (const CatalogEntry& entry : catalog) {
    if (entry.name == "pad-attention-heads") pad = &entry;
  }
  ASSERT_TRUE(pad != nullptr && pad->file);
  const auto forward = applyAdapter(*pad->file, loadModel(testing::zooPath("llama-hd64.pt")),
                                    profile, /*check_equivalence=*/false);
  ASSERT_TRUE(forward.changed());
  const DecodeAdaptation padded = adaptedWith(catalog, "pad-attention-heads");
  const DecodeGraphsToSave decode{padded.prefill.get(), padded.step.get(), padded.prefill_applied,
                                  padded.step_applied};
  const std::string out = testing::uniqueTempPath("llama-hd64-decode-adapted.pt");
  saveAdaptedArchive(*forward.after, {"pad-attention-heads"}, out, &decode);

  for (const ModelGraph kind : {ModelGraph::kPrefill, ModelGraph::kDecodeStep}) {
    SCOPED_TRACE(kind == ModelGraph::kPrefill ? "prefill" : "step");
    const LoadedModel& adapted = kind == ModelGraph::kPrefill ? *padded.prefill : *padded.step;
    LoadOptions options;
    options.graph = kind;
    const auto saved = loadModel(out, options);
    ASSERT_TRUE(saved->card.decode.has_value());
    const auto live = adapted.graph->copy();
    torch::jit::EliminateDeadCode(live);
    const auto before = operatorPaths(*live);
    const auto after = operatorPaths(*saved->graph);
    EXPECT_TRUE(std::includes(before.begin(), before.end(), after.begin(), after.end()));
    EXPECT_GE(after.size() * 10, before.size() * 9);
    const auto atRoot = [](const std::multiset<std::string>& paths) {
      return std::count_if(paths.begin(), paths.end(),
                           [](const std::string& path) { return path.back() == ' '; });
    };
    EXPECT_LE(atRoot(after), atRoot(before));
    EXPECT_LT(atRoot(after) * 4, static_cast<std::ptrdiff_t>(after.size()));
    const std::vector<at::Tensor> expected = flattenTensors(adapted.example_outputs);
    const std::vector<at::Tensor> got = flattenTensors(saved->example_outputs);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(at::allclose(got[i], expected[i], 1e-5, 1e-6)) << i;
    }
  }
  std::remove(out.c_str());
}

}  // namespace
}  // namespace stickler
