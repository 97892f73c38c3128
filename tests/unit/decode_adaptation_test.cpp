// The catalog's adapters on a decoder's prefill and step graphs (decode_adaptation.h): the
// prefill's example outputs are the decode's reference, so they are values whether an adapter
// changed the prefill or none did.
#include "adapters/engine/decode_adaptation.h"

#include <gtest/gtest.h>

#include "adapters/engine/adapter_catalog.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/decode_card.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"
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

}  // namespace
}  // namespace stickler
