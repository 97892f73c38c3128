// pad_to_sticks: a linear layer whose output size is not a whole number of sticks (or whose
// per-core slice overflows the span) gets zero rows appended to its weight and bias; the
// padded result is sliced back to the original size, so every consumer sees the same values.
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/shared_constants.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/device/core_span.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;

at::Tensor withZeroRows(const at::Tensor& tensor, int64_t rows) {
  std::vector<int64_t> shape = tensor.sizes().vec();
  shape[0] = rows - tensor.size(0);
  const at::Tensor values = tensor.detach();
  return at::cat({values, at::zeros(shape, values.options())}, 0);
}

// The weight (and bias) of a linear node, read from the model.
struct LinearWeights {
  at::Tensor weight;
  std::optional<at::Tensor> bias;
};

std::optional<LinearWeights> linearWeights(const GraphEdit& edit, const Node& node) {
  auto weight = edit.constantOrWeight(node.input(1));
  if (!weight || !weight->isTensor() || weight->toTensor().dim() != 2) return std::nullopt;
  LinearWeights weights{weight->toTensor(), std::nullopt};
  auto bias = edit.constantOrWeight(node.input(2));
  if (!bias) return std::nullopt;  // a computed bias: not this transform's business
  if (bias->isTensor()) weights.bias = bias->toTensor();
  return weights;
}

void padLinear(GraphEdit& edit, Node* linear, const LinearWeights& weights, int64_t padded) {
  torch::jit::Graph& graph = edit.graph();
  const int64_t outputs = weights.weight.size(0);
  Value* result = nullptr;
  {
    torch::jit::WithInsertPoint insert_point(linear);
    torch::jit::WithCurrentScope scope(graph, linear->scope());
    Value* weight = insertSharedConstant(graph, withZeroRows(weights.weight, padded));
    Value* bias = weights.bias ? insertSharedConstant(graph, withZeroRows(*weights.bias, padded))
                               : graph.insertConstant(c10::IValue());
    Value* padded_result = graph.insert(aten::linear, {linear->input(0), weight, bias});
    result = graph.insert(aten::slice, {padded_result, -1, 0, outputs, 1});
    for (Value* value : {weight, bias, padded_result, result}) {
      value->node()->setSourceRange(linear->sourceRange());
    }
    edit.noteAdded(padded_result->node());
    edit.noteAdded(result->node());
  }
  result->setType(linear->output()->type());
  linear->output()->replaceAllUsesWith(result);
  std::vector<Node*> producers = {linear->input(1)->node(), linear->input(2)->node()};
  edit.destroy(linear);
  for (Node* producer : producers) edit.destroyIfUnused(producer);
}

}  // namespace

int64_t paddedOutputSize(int64_t outputs, int64_t inputs, const DeviceProfile& profile) {
  const int64_t stick = profile.stickElements();
  const int64_t sticks = sticksThatFitSpan(outputs, inputs, stick, DeviceProfile::kBytesPerValue,
                                           profile.device.core_span_bytes);
  return sticks * stick;
}

void padToSticks(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile) {
  const std::string module = arguments.at("module");
  if (arguments.at("dim") != "out") {
    throw UserError(
        "pad_to_sticks: only dim=\"out\" can be padded (padding the input size "
        "would change the activations that feed it)");
  }
  std::vector<Node*> targets;
  for (const Node* node : allNodes(edit.graph())) {
    if (node->kind() == aten::linear && globMatch(module, modulePathOf(*node))) {
      targets.push_back(const_cast<Node*>(node));
    }
  }
  for (Node* linear : targets) {
    auto weights = linearWeights(edit, *linear);
    if (!weights) continue;
    const int64_t outputs = weights->weight.size(0);
    const int64_t padded = paddedOutputSize(outputs, weights->weight.size(1), profile);
    if (padded <= 0) {
      throw UserError(
          "pad_to_sticks: no stick count up to twice the need fits the per-core "
          "span for " +
          modulePathOf(*linear));
    }
    if (padded == outputs) continue;  // already whole sticks whose slices fit
    padLinear(edit, linear, *weights, padded);
    ++edit.change().rewrites;
  }
}

}  // namespace stickler
