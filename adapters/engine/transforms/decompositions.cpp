#include "adapters/engine/transforms/decompositions.h"

#include <map>
#include <mutex>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/jit.h>

#include "adapters/engine/graph_edit.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/model_card.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

// Written with multiplications rather than pow, and sums or means over the last dimension only:
// the forms every profile lowers. The gelu constants are 1/sqrt(2) and sqrt(2/pi).
const char* const kDecompositions = R"(
def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float):
    centered = x - x.mean([-1], keepdim=True)
    variance = (centered * centered).mean([-1], keepdim=True)
    return centered * torch.rsqrt(variance + eps) * weight + bias

def layer_norm_over_padding(x: Tensor, weight: Tensor, bias: Tensor, eps: float, real: Tensor, count: float):
    centered = (x - x.sum([-1], keepdim=True) / count) * real
    variance = (centered * centered).sum([-1], keepdim=True) / count
    return centered * torch.rsqrt(variance + eps) * weight + bias

def gelu(x: Tensor):
    return x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))

def gelu_tanh(x: Tensor):
    return x * 0.5 * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

def silu(x: Tensor):
    return x * torch.sigmoid(x)
)";

std::shared_ptr<torch::jit::Graph> decompositionGraph(const std::string& name) {
  static std::mutex mutex;
  static std::shared_ptr<torch::jit::CompilationUnit> unit;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!unit) unit = torch::jit::compile(kDecompositions);
  return torch::jit::toGraphFunction(unit->get_function(name)).graph();
}

bool isNone(const Value* value) {
  return value->type()->kind() == c10::TypeKind::NoneType;
}

// The node's module, for messages: "encoder.layer.0.output.LayerNorm" or "the model itself".
std::string whereIs(const Node& node) {
  const std::string path = modulePathOf(node);
  return path.empty() ? "the model's own forward" : path;
}

// Inserts the decomposition before `node` with `inputs`, gives the new nodes the node's scope
// and source range, moves the node's uses to the result and destroys the node.
void replaceWith(GraphEdit& edit, Node* node, const std::string& name,
                 const std::vector<Value*>& inputs) {
  torch::jit::Graph& graph = edit.graph();
  Node* before = node->prev();
  Value* result = nullptr;
  {
    torch::jit::WithInsertPoint insert_point(node);
    torch::jit::WithCurrentScope scope(graph, node->scope());
    result = torch::jit::insertGraph(graph, *decompositionGraph(name), inputs).at(0);
  }
  for (Node* added = before->next(); added != node; added = added->next()) {
    added->setSourceRange(node->sourceRange());
    if (added->kind().is_aten()) edit.noteAdded(added);  // not the constants and lists
  }
  result->setType(node->output()->type());
  node->output()->replaceAllUsesWith(result);
  std::vector<Node*> producers;
  for (Value* input : node->inputs()) producers.push_back(input->node());
  edit.destroy(node);
  for (Node* producer : producers) edit.destroyIfUnused(producer);
}

// layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable): the forms decomposed
// are one normalized dimension with both weight and bias, which is what nn.LayerNorm exports.
std::vector<Value*> layerNormInputs(const Node& node) {
  auto shape = torch::jit::toIValue(node.input(1));
  const bool one_dim = (shape && shape->isIntList() && shape->toIntVector().size() == 1) ||
                       (node.input(1)->node()->kind() == prim::ListConstruct &&
                        node.input(1)->node()->inputs().size() == 1);
  if (!one_dim) {
    throw UserError("decompose_op: the layer_norm in " + whereIs(node) +
                    " normalizes over several dimensions; only the last one is decomposed");
  }
  if (isNone(node.input(2)) || isNone(node.input(3))) {
    throw UserError("decompose_op: the layer_norm in " + whereIs(node) +
                    " has no weight or no bias; only affine layer norms are decomposed");
  }
  return {node.input(0), node.input(2), node.input(3), node.input(4)};
}

std::string geluForm(const Node& node) {
  auto approximate = node.inputs().size() > 1 ? torch::jit::toIValue(node.input(1)) : c10::nullopt;
  if (!approximate || !approximate->isString() || approximate->toStringRef() == "none") {
    return "gelu";
  }
  if (approximate->toStringRef() == "tanh") return "gelu_tanh";
  throw UserError("decompose_op: the gelu in " + whereIs(node) + " uses approximate='" +
                  approximate->toStringRef() + "', which has no decomposition");
}

}  // namespace

std::vector<std::string> decomposableOps() {
  return {"aten::layer_norm", "aten::gelu", "aten::silu"};
}

void decompose(GraphEdit& edit, Node* node) {
  const std::string op = node->kind().toQualString();
  if (op == "aten::layer_norm") {
    replaceWith(edit, node, "layer_norm", layerNormInputs(*node));
  } else if (op == "aten::gelu") {
    replaceWith(edit, node, geluForm(*node), {node->input(0)});
  } else if (op == "aten::silu" || op == "aten::silu_") {
    replaceWith(edit, node, "silu", {node->input(0)});
  } else {
    throw UserError("decompose_op: " + op + " has no decomposition");
  }
}

at::Tensor realPositionsMask(const GraphEdit& edit, const Value* like,
                             const std::vector<int64_t>& shape, int64_t real_size) {
  // In the value's own dtype, so the mask promotes nothing.
  c10::ScalarType dtype = c10::kFloat;
  if (auto desc = edit.describe(like); desc && desc->kind == "Tensor") {
    if (auto known = dtypeFromName(desc->dtype)) dtype = toScalarType(*known);
  }
  at::Tensor real = at::zeros(shape, at::TensorOptions().dtype(dtype));
  real.narrow(0, 0, real_size).fill_(1.0);
  return real;
}

void decomposeLayerNormOverPadding(GraphEdit& edit, Node* node, int64_t real_size,
                                   int64_t padded_size) {
  std::vector<Value*> inputs = layerNormInputs(*node);
  torch::jit::Graph& graph = edit.graph();
  torch::jit::WithInsertPoint insert_point(node);
  inputs.push_back(
      graph.insertConstant(realPositionsMask(edit, node->input(0), {padded_size}, real_size)));
  inputs.push_back(graph.insertConstant(static_cast<double>(real_size)));
  replaceWith(edit, node, "layer_norm_over_padding", inputs);
}

}  // namespace stickler
