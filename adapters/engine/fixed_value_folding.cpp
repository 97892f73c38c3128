#include "adapters/engine/fixed_value_folding.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include "simulator/backends/float64_graph.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/model_card.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/workers/worker_main.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Operators whose result's shape depends on the values they read: a size downstream of one
// differs from input to input even at the card's shapes.
bool shapeDependsOnData(const Node& node) {
  static const std::unordered_set<std::string> kDataShaped = {
      "aten::nonzero",
      "aten::nonzero_numpy",
      "aten::masked_select",
      "aten::unique",
      "aten::_unique",
      "aten::_unique2",
      "aten::unique_consecutive",
      "aten::unique_dim",
      "aten::repeat_interleave",  // with a tensor of repeats; an int gives a fixed shape
      "aten::argwhere",
      "aten::index",  // with a boolean mask; integer indices are judged by FixedShapes
      "aten::bincount",
  };
  // where(condition) is nonzero as a tuple; where(condition, x, y) is elementwise.
  if (node.kind() == c10::Symbol::fromQualString("aten::where")) return node.inputs().size() == 1;
  if (node.kind() == c10::Symbol::fromQualString("aten::repeat_interleave")) {
    return node.inputs().size() < 2 ||
           node.input(1)->type()->kind() != c10::TypeKind::IntType;  // GPT-J's sin, 2 apiece
  }
  return kDataShaped.count(node.kind().toQualString()) > 0;
}

bool insideControlFlow(const Node& node) {
  return node.owningBlock()->owningNode() != nullptr;
}

// Whether a size of `value` is fixed by the model card: the value was recorded once, outside
// prim::If and prim::Loop, and nothing upstream has a data-dependent shape.
class FixedShapes {
 public:
  explicit FixedShapes(const GraphEdit& edit) : edit_(edit) {}

  bool fixed(const Value* value) {
    const Node* producer = value->node();
    if (producer->kind() == torch::jit::prim::Param) return true;  // the card's inputs
    auto known = memo_.find(producer);
    if (known != memo_.end()) return known->second;
    memo_[producer] = false;  // a cycle cannot occur in a graph; this only guards recursion
    bool result = (!shapeDependsOnData(*producer) || indexesByIntegers(*producer)) &&
                  !insideControlFlow(*producer);
    if (result && producer->kind() != torch::jit::prim::Constant &&
        producer->kind() != torch::jit::prim::GetAttr) {
      const Node* original = edit_.originalOf(producer);
      if (original != nullptr) {
        auto record = edit_.model().records.find(original);
        result = record != edit_.model().records.end() && record->second.executions == 1;
      }
      for (const Value* input : producer->inputs()) result = result && fixed(input);
    }
    memo_[producer] = result;
    return result;
  }

  // Why a size of `value` is not fixed, for a person: the first operator upstream that makes it
  // depend on the data or on control flow; "" when it is fixed.
  std::string whyNot(const Value* value) {
    if (fixed(value)) return "";
    const Node* producer = value->node();
    const std::string where = operatorWhere(*producer);
    if (insideControlFlow(*producer)) return where + " runs inside a prim::If or prim::Loop";
    if (shapeDependsOnData(*producer) && !indexesByIntegers(*producer)) {
      return where + " gives a shape that depends on the data" +
             (producer->kind() == c10::Symbol::fromQualString("aten::index")
                  ? " (a boolean mask, or indices whose dtype is not known)"
                  : "");
    }
    for (const Value* input : producer->inputs()) {
      std::string reason = whyNot(input);
      if (!reason.empty()) return reason;
    }
    return where + " ran more than once (or never) on the example inputs";
  }

 private:
  // aten::index whose indices are all integer tensors (or None): its result's shape is the
  // indices' shapes broadcast, whatever their values (a table read at position_ids); only a
  // boolean mask makes the shape depend on the data. An index whose dtype is not known counts
  // as a mask.
  bool indexesByIntegers(const Node& node) const {
    if (node.kind() != c10::Symbol::fromQualString("aten::index") || node.inputs().size() < 2) {
      return false;
    }
    const Node* list = node.input(1)->node();
    if (list->kind() != torch::jit::prim::ListConstruct) return false;
    for (const Value* index : list->inputs()) {
      if (index->type()->kind() == c10::TypeKind::NoneType) continue;
      const std::optional<std::string> dtype = dtypeOf(index);
      if (!dtype ||
          (*dtype != "int64" && *dtype != "int32" && *dtype != "int16" && *dtype != "int8")) {
        return false;
      }
    }
    return true;
  }

  // The dtype `value` had in the example run: of the card's input it is, or as recorded at
  // the node that made it.
  std::optional<std::string> dtypeOf(const Value* value) const {
    const Node* producer = value->node();
    if (producer->kind() == torch::jit::prim::Constant) {
      const auto constant = torch::jit::toIValue(value);
      if (constant && constant->isNone()) return std::nullopt;
      if (constant && constant->isTensor()) return dtypeName(constant->toTensor().scalar_type());
      return std::nullopt;
    }
    if (producer->kind() == torch::jit::prim::Param) {
      const auto& inputs = edit_.model().card.inputs;
      const size_t position = value->offset();  // input 0 is the module itself
      if (position == 0 || position > inputs.size()) return std::nullopt;
      return dtypeName(inputs[position - 1].dtype);
    }
    const Node* original = edit_.originalOf(producer);
    if (original == nullptr) return std::nullopt;
    const auto record = edit_.model().records.find(original);
    if (record == edit_.model().records.end() || value->offset() >= record->second.outputs.size()) {
      return std::nullopt;
    }
    const ValueDesc& described = record->second.outputs[value->offset()];
    if (described.kind != "Tensor") return std::nullopt;
    return described.dtype;
  }

  const GraphEdit& edit_;
  std::unordered_map<const Node*, bool> memo_;
};

// Runs `node` on `stack` (its inputs), leaving its outputs. Lists and tuples the code builds
// have no schema to look an operation up by; they are built here.
void evaluate(const Node& node, torch::jit::Stack& stack) {
  if (node.kind() == torch::jit::prim::ListConstruct) {
    c10::impl::GenericList list(node.output()->type()->expectRef<c10::ListType>().getElementType());
    for (auto& element : stack) list.push_back(std::move(element));
    stack = {c10::IValue(std::move(list))};
  } else if (node.kind() == torch::jit::prim::TupleConstruct) {
    auto tuple = c10::ivalue::Tuple::create(std::move(stack));
    stack = {c10::IValue(std::move(tuple))};
  } else {
    node.getOperation()(stack);  // throws for an operator LibTorch cannot run on its own
  }
}

bool mayEvaluate(const Node& node) {
  const auto kind = node.kind();
  return kind != torch::jit::prim::Constant && kind != torch::jit::prim::GetAttr &&
         node.blocks().empty() && !node.hasSideEffects() && !node.isNondeterministic();
}

// What one operator computed: as the model computes it and as its float64 run does.
struct Evaluated {
  std::vector<c10::IValue> values;
  std::vector<c10::IValue> values64;
  bool read_a_shape = false;
};

// Evaluates every operator of `nodes` (in order) whose inputs are known; changes nothing.
std::vector<std::optional<Evaluated>> evaluateFixed(const GraphEdit& edit,
                                                    const std::vector<Node*>& nodes,
                                                    std::vector<std::string>& not_folded) {
  // Values of weights must not carry autograd history into constants.
  const torch::NoGradGuard no_grad;
  FixedShapes shapes(edit);
  // Each value twice: as the model computes it, and as its float64 run does (toFloat64Graph's
  // rules: float tensors widened, dtype arguments saying float32 say float64), so that a folded
  // float32 constant carries the float64 value the equivalence check's float64 run must read.
  std::unordered_map<const Value*, std::pair<c10::IValue, c10::IValue>> known;
  auto valueOf = [&](const Value* value) -> std::optional<std::pair<c10::IValue, c10::IValue>> {
    auto found = known.find(value);
    if (found != known.end()) return found->second;
    auto constant = edit.constantOrWeight(value);
    if (!constant) return std::nullopt;
    const Node* producer = value->node();
    if (producer->kind() == torch::jit::prim::Constant && hasFloat64Twin(*producer)) {
      return std::make_pair(*constant, c10::IValue(float64TwinOf(*producer)));
    }
    return std::make_pair(*constant, toFloat64Value(*constant));
  };
  std::vector<std::optional<Evaluated>> evaluated(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node* node = nodes[n];
    if (!mayEvaluate(*node)) continue;
    const std::string kind = node->kind().toQualString();
    // What an operator reads of a model tensor's metadata is known from the recorded run:
    // dtype and rank always, sizes when the card fixes them.
    const bool reads_dtype = kind == "prim::dtype" || kind == "aten::dim";
    const bool reads_shape = kind == "aten::size" || kind == "aten::numel";
    const c10::FunctionSchema* schema = node->maybeSchema();
    Evaluated result;
    torch::jit::Stack stack;
    torch::jit::Stack stack64;
    bool all_known = true;
    for (size_t i = 0; i < node->inputs().size() && all_known; ++i) {
      const Value* input = node->input(i);
      if (auto value = valueOf(input)) {
        stack.push_back(value->first);
        const bool names_dtype = schema != nullptr && i < schema->arguments().size() &&
                                 schema->arguments()[i].name() == "dtype";
        const bool says_float32 =
            value->second.isInt() &&
            widensToFloat64(static_cast<c10::ScalarType>(value->second.toInt()));
        stack64.push_back(names_dtype && says_float32
                              ? c10::IValue(static_cast<int64_t>(c10::kDouble))
                              : value->second);
        continue;
      }
      auto desc = (reads_dtype || reads_shape) && i == 0 ? edit.describe(input) : std::nullopt;
      if (desc && desc->kind == "Tensor" && reads_shape && !shapes.fixed(input)) {
        const std::string reason =
            operatorWhere(*node) +
            " reads a shape the model card does not fix: " + shapes.whyNot(input) +
            "; what it computes runs on every forward";
        if (std::find(not_folded.begin(), not_folded.end(), reason) == not_folded.end() &&
            not_folded.size() < kNotFoldedShown) {
          not_folded.push_back(reason);
        }
      }
      if (desc && desc->kind == "Tensor" && (reads_dtype || shapes.fixed(input))) {
        // A stand-in with the shape and dtype and no storage: nothing else is read.
        const auto dtype = dtypeFromName(desc->dtype);
        const c10::ScalarType type = dtype ? toScalarType(*dtype) : c10::kFloat;
        const auto meta = at::TensorOptions().device(at::kMeta);
        stack.push_back(at::empty(desc->shape, meta.dtype(type)));
        stack64.push_back(
            at::empty(desc->shape, meta.dtype(widensToFloat64(type) ? c10::kDouble : type)));
        result.read_a_shape = reads_shape;
        continue;
      }
      all_known = false;
    }
    if (!all_known) continue;
    try {
      evaluate(*node, stack);
      evaluate(*node, stack64);
    } catch (const std::exception&) {
      continue;  // left to run with the model, where its error (if any) is the model's
    }
    if (stack.size() != node->outputs().size() || stack64.size() != stack.size()) continue;
    for (size_t i = 0; i < stack.size(); ++i) {
      known[node->output(i)] = {stack[i], stack64[i]};
    }
    result.values = std::move(stack);
    result.values64 = std::move(stack64);
    evaluated[n] = std::move(result);
  }
  return evaluated;
}

// Whether any operator of `nodes` could be folded, judged from the graph alone: its inputs come
// from constants, attribute reads (weights) or other operators of `nodes`, or it reads a
// tensor's metadata. When none could, no worker is started.
bool anyFoldable(const std::vector<Node*>& nodes) {
  const std::unordered_set<const Node*> inside(nodes.begin(), nodes.end());
  return std::any_of(nodes.begin(), nodes.end(), [&](const Node* node) {
    if (!mayEvaluate(*node)) return false;
    const std::string kind = node->kind().toQualString();
    if (kind == "aten::size" || kind == "aten::numel" || kind == "aten::dim" ||
        kind == "prim::dtype") {
      return true;
    }
    return std::all_of(node->inputs().begin(), node->inputs().end(), [&](const Value* input) {
      const auto producer = input->node()->kind();
      return producer == torch::jit::prim::Constant || producer == torch::jit::prim::GetAttr ||
             inside.count(input->node()) > 0;
    });
  });
}

}  // namespace

FoldResult foldFixedValues(GraphEdit& edit, const std::vector<Node*>& nodes) {
  FoldResult result;
  if (!anyFoldable(nodes)) return result;
  setWorkerPhase("computing the replacement's constants");
  const std::vector<std::optional<Evaluated>> evaluated =
      evaluateFixed(edit, nodes, result.not_folded);
  std::unordered_map<const Value*, std::pair<c10::IValue, c10::IValue>> known;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!evaluated[n]) continue;
    for (size_t i = 0; i < nodes[n]->outputs().size(); ++i) {
      known[nodes[n]->output(i)] = {evaluated[n]->values.at(i), evaluated[n]->values64.at(i)};
    }
    result.fixed_shapes = result.fixed_shapes || evaluated[n]->read_a_shape;
  }
  // Last first: a value read only by folded operators is never made a constant of its own.
  for (size_t n = nodes.size(); n-- > 0;) {
    if (!evaluated[n]) continue;
    Node* node = nodes[n];
    // Graphs pass lists as the list they build from elements (`mean(x, [-1])` reads a
    // prim::ListConstruct), and so do patterns compiled from code: a list made a constant would
    // match no pattern any more, not even the replacement's own. Its elements are folded.
    if (node->kind() == torch::jit::prim::ListConstruct ||
        node->kind() == torch::jit::prim::TupleConstruct) {
      continue;
    }
    for (Value* output : node->outputs()) {
      if (!output->hasUses()) continue;
      const auto& [value, twin] = known.at(output);
      const torch::jit::WithInsertPoint insert_point(node);
      // A tensor is cloned: a constant must not be a view of a weight's storage.
      auto constant = torch::jit::tryInsertConstant(
          *node->owningGraph(), value.isTensor() ? c10::IValue(value.toTensor().clone()) : value);
      if (!constant) continue;
      Node* constant_node = (*constant)->node();
      constant_node->setSourceRange(node->sourceRange());
      constant_node->setScope(node->scope());
      if (value.isTensor() && widensToFloat64(value.toTensor().scalar_type()) && twin.isTensor() &&
          twin.toTensor().is_floating_point()) {
        attachFloat64Twin(*constant_node, twin.toTensor());
      }
      output->replaceAllUsesWith(*constant);
    }
    bool used = false;
    for (const Value* output : node->outputs()) used = used || output->hasUses();
    if (used) continue;
    result.destroyed.insert(node);
    node->destroy();
    ++result.folded;
  }
  return result;
}

}  // namespace stickler
