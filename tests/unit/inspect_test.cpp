// The inspect report: the documented JSON document, for every zoo model.
#include "simulator/inspect/inspect_model.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/unit/zoo.h"
#include "tools/framework/operation_table.h"
#include "tools/model/inspect_report.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::zooModel;
using testing::zooPath;

const json* findTreeNode(const json& node, const std::string& name) {
  if (node.at("name") == name) return &node;
  for (const auto& child : node.at("children")) {
    if (const json* found = findTreeNode(child, name)) return found;
  }
  return nullptr;
}

class ZooInspect : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooInspect, ReportListsEveryAtenNodeWithModuleAndShapes) {
  const json report = inspectReport(inspectModel({.model = zooPath(GetParam() + ".pt")}));
  EXPECT_EQ(report.at("schema"), "stickler.inspect");
  EXPECT_EQ(report.at("version"), 1);
  EXPECT_EQ(report.at("model").at("sha256").get<std::string>().size(), 64u);
  EXPECT_EQ(report.at("parameters").at("total"), zooModel(GetParam()).at("parameters"));
  const auto& nodes = report.at("nodes");
  EXPECT_EQ(nodes.size(), report.at("graph").at("aten_nodes").get<size_t>());
  int64_t histogram_total = 0;
  for (const auto& entry : report.at("operators"))
    histogram_total += entry.at("count").get<int64_t>();
  EXPECT_EQ(histogram_total, static_cast<int64_t>(nodes.size()));
  size_t executed = 0;
  for (const auto& node : nodes) {
    EXPECT_EQ(node.at("op").get<std::string>().rfind("aten::", 0), 0u);
    EXPECT_FALSE(node.at("module").get<std::string>().empty());
    EXPECT_FALSE(node.at("module_class").get<std::string>().empty());
    EXPECT_FALSE(node.at("source").at("code").is_null());
    if (node.at("executions") == 0) continue;
    ++executed;
    for (const auto& output : node.at("outputs")) {
      if (output.at("kind") == "Tensor") {
        EXPECT_TRUE(output.contains("shape"));
      }
    }
  }
  EXPECT_GT(executed, nodes.size() / 2);
  const auto& outputs = report.at("outputs");
  const auto& shapes = zooModel(GetParam()).at("output_shapes");
  ASSERT_EQ(outputs.size(), shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(outputs[i].at("shape"), shapes[i]);
  EXPECT_EQ(outputs[0].at("name"), report.at("card").at("outputs").at(0).at("name"));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooInspect, ::testing::ValuesIn(testing::zooModelNames()),
                         [](const auto& info) { return testing::testName(info.param); });

TEST(InspectTree, RepeatedLayersCollapse) {
  const json llama = inspectReport(
      inspectModel({.model = zooPath("llama-4layer-outliers.pt"), .include_nodes = false}));
  EXPECT_FALSE(llama.contains("nodes"));
  const json* layers = findTreeNode(llama.at("module_tree"), "layers.0-3");
  ASSERT_NE(layers, nullptr) << llama.at("module_tree").dump(1);
  EXPECT_EQ(layers->at("class"), "LlamaDecoderLayer");
  EXPECT_EQ(layers->at("count"), 4);

  const json bert =
      inspectReport(inspectModel({.model = zooPath("bert-tiny.pt"), .include_nodes = false}));
  const json* bert_layers = findTreeNode(bert.at("module_tree"), "layer.0-1");
  ASSERT_NE(bert_layers, nullptr);
  EXPECT_EQ(bert_layers->at("class"), "BertLayer");

  // Bamba's mamba and attention layers differ, so they must not collapse.
  const json bamba =
      inspectReport(inspectModel({.model = zooPath("bamba-3layer.pt"), .include_nodes = false}));
  EXPECT_NE(findTreeNode(bamba.at("module_tree"), "layers.1"), nullptr);
  EXPECT_EQ(findTreeNode(bamba.at("module_tree"), "layers.0-2"), nullptr);
}

TEST(InspectOutputs, LogitsSummaryNamesTheTopToken) {
  const json report =
      inspectReport(inspectModel({.model = zooPath("gpt2-tiny.pt"), .include_nodes = false}));
  const auto& logits = report.at("outputs").at(0);
  EXPECT_EQ(logits.at("kind"), "logits");
  EXPECT_EQ(logits.at("non_finite"), 0);
  EXPECT_GE(logits.at("top1_last_position").get<int64_t>(), 0);
  EXPECT_LT(logits.at("top1_last_position").get<int64_t>(), 1000);
  EXPECT_LE(logits.at("min").get<double>(), logits.at("mean").get<double>());
  EXPECT_GT(report.at("parameters").at("tied"), 0);  // lm_head shares wte's weight
  EXPECT_GE(report.at("run").at("seconds").get<double>(), 0.0);
}

// Not run, a model is inspected from shapes: the same report without output values or a run.
TEST(InspectOutputs, NotRunTheReportIsTheSameWithoutValues) {
  const json ran = inspectReport(inspectModel({.model = zooPath("llama-tiny.pt")}));
  const json shapes =
      inspectReport(inspectModel({.model = zooPath("llama-tiny.pt"), .run = InspectRun::kNo}));
  EXPECT_EQ(shapes.at("nodes"), ran.at("nodes"));
  EXPECT_EQ(shapes.at("operators"), ran.at("operators"));
  EXPECT_EQ(shapes.at("parameters"), ran.at("parameters"));
  EXPECT_EQ(shapes.at("model"), ran.at("model"));
  ASSERT_EQ(shapes.at("outputs").size(), ran.at("outputs").size());
  for (size_t i = 0; i < ran.at("outputs").size(); ++i) {
    const json& output = shapes.at("outputs").at(i);
    EXPECT_EQ(output.at("shape"), ran.at("outputs").at(i).at("shape"));
    EXPECT_EQ(output.at("dtype"), ran.at("outputs").at(i).at("dtype"));
    EXPECT_TRUE(ran.at("outputs").at(i).contains("mean"));
    EXPECT_FALSE(output.contains("mean"));
    EXPECT_FALSE(output.contains("top1_last_position"));
  }
  EXPECT_FALSE(shapes.at("run").contains("seconds"));
  EXPECT_EQ(shapes.at("run").at("skipped"), "not asked to (run: no)");
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// The text `stickler inspect` prints, for every zoo model: through the operation table, as the
// CLI renders it.
TEST(InspectText, EveryZooModelShowsItsCollapsedLayers) {
  const std::map<std::string, std::string> expected = {
      {"gpt2-tiny", "h.0-1: GPT2Block x2"},
      {"gpt2-h80", "h.0-2: GPT2Block x3"},
      {"bert-tiny", "layer.0-1: BertLayer x2"},
      {"xlm-roberta-tiny", "layer.0-1: XLMRobertaLayer x2"},
      {"mpnet-tiny", "layer.0-1: MPNetLayer x2"},
      {"llama-4layer-outliers", "layers.0-3: LlamaDecoderLayer x4"},
      {"granite-hd80", "layers.0-1: GraniteDecoderLayer x2"},
      {"vit-tiny", "layer.0-1: ViTLayer x2"},
      {"t5-encoder-dkv64", "block.1-2: T5Block x2"},  // block 0 holds the relative bias
      {"mixtral-tiny", "experts.0-3: MixtralBlockSparseTop2MLP x4"},
  };
  const Operation* inspect = findOperation("inspect_model");
  ASSERT_NE(inspect, nullptr);
  OperationContext context;
  for (const auto& name : testing::zooModelNames()) {
    const json output = runOperation(
        *inspect, {{"model", zooPath(name + ".pt")}, {"include_nodes", false}}, context);
    const std::string text = inspect->render_text(output);
    EXPECT_EQ(text.rfind(name + " (", 0), 0u) << text;
    EXPECT_NE(text.find(output.at("model").at("class").get<std::string>()), std::string::npos);
    EXPECT_NE(text.find("Operators ("), std::string::npos);
    auto it = expected.find(name);
    if (it != expected.end()) {
      EXPECT_NE(text.find(it->second), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace stickler
