#include "simulator/inspect/module_tree.h"

#include <gtest/gtest.h>

namespace stickler {
namespace {

void add(ModuleTable& table, const std::string& path, const std::string& cls, int64_t params = 0) {
  ModuleEntry entry;
  entry.path = path;
  entry.class_name = cls;
  entry.own_parameters = params;
  table.add(entry);
}

// A Llama-like hierarchy with `layers` layers, one of them (if `odd`) different.
ModuleTable llamaLike(int layers, int odd = -1) {
  ModuleTable table;
  add(table, "", "LlamaForCausalLM");
  add(table, "model", "LlamaModel");
  add(table, "model.embed_tokens", "Embedding", 1000);
  add(table, "model.layers", "ModuleList");
  for (int i = 0; i < layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i);
    add(table, layer, "LlamaDecoderLayer");
    add(table, layer + ".self_attn", "LlamaAttention", i == odd ? 7 : 40);
    add(table, layer + ".mlp", "LlamaMLP", 60);
  }
  add(table, "model.norm", "LlamaRMSNorm", 8);
  add(table, "lm_head", "Linear", 1000);
  return table;
}

TEST(ModuleTree, CollapsesIdenticalLayers) {
  const ModuleTreeNode root = buildModuleTree(llamaLike(12));
  EXPECT_EQ(root.class_name, "LlamaForCausalLM");
  EXPECT_EQ(root.parameters, 1000 + 12 * 100 + 8 + 1000);
  ASSERT_EQ(root.children.size(), 2u);
  const ModuleTreeNode& model = root.children[0];
  ASSERT_EQ(model.children.size(), 3u);  // embed_tokens, layers.0-11, norm
  const ModuleTreeNode& layers = model.children[1];
  EXPECT_EQ(layers.name, "layers.0-11");
  EXPECT_EQ(layers.class_name, "LlamaDecoderLayer");
  EXPECT_EQ(layers.count, 12);
  EXPECT_EQ(layers.parameters, 100);
  EXPECT_EQ(layers.path, "model.layers.0");
  ASSERT_EQ(layers.children.size(), 2u);
  EXPECT_EQ(layers.children[0].name, "self_attn");

  const std::string drawing = renderModuleTree(root);
  EXPECT_NE(drawing.find("layers.0-11: LlamaDecoderLayer x12"), std::string::npos) << drawing;
  EXPECT_EQ(drawing.find("ModuleList"), std::string::npos) << drawing;
}

TEST(ModuleTree, SplitsRunsAtALayerThatDiffers) {
  const ModuleTreeNode root = buildModuleTree(llamaLike(6, /*odd=*/2));
  const auto& children = root.children[0].children;
  ASSERT_EQ(children.size(), 5u);
  EXPECT_EQ(children[1].name, "layers.0-1");
  EXPECT_EQ(children[1].count, 2);
  EXPECT_EQ(children[2].name, "layers.2");
  EXPECT_EQ(children[2].count, 1);
  EXPECT_EQ(children[3].name, "layers.3-5");
  EXPECT_EQ(children[3].count, 3);
}

TEST(ModuleTree, JsonKeepsCountsAndPaths) {
  const auto json = moduleTreeToJson(buildModuleTree(llamaLike(3)));
  EXPECT_EQ(json["path"], "<root>");
  EXPECT_EQ(json["children"][0]["children"][1]["name"], "layers.0-2");
  EXPECT_EQ(json["children"][0]["children"][1]["count"], 3);
}

TEST(ModuleTable, PathsAndParameters) {
  const ModuleTable table = llamaLike(2);
  EXPECT_EQ(table.classOf("model.layers.1.mlp"), "LlamaMLP");
  EXPECT_EQ(table.classOf("no.such"), "");
  EXPECT_EQ(table.totalParameters("model.layers.1"), 100);
  EXPECT_EQ(table.totalParameters(""), 1000 + 200 + 8 + 1000);
  EXPECT_TRUE(isWithin("model.layers.1.mlp", "model.layers.1"));
  EXPECT_FALSE(isWithin("model.layers.10", "model.layers.1"));
  EXPECT_EQ(displayPath(""), "<root>");
}

TEST(HumanCount, ReadableUnits) {
  EXPECT_EQ(humanCount(512), "512");
  EXPECT_EQ(humanCount(64000), "64.0K");
  EXPECT_EQ(humanCount(1230000), "1.23M");
  EXPECT_EQ(humanCount(7000000000), "7.00B");
}

}  // namespace
}  // namespace stickler
