#include "adapters/engine/traced_no_ops.h"

#include <algorithm>
#include <limits>

#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "adapters/engine/graph_edit.h"
#include "simulator/graph/graph_nodes.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const c10::Symbol kSlice = c10::Symbol::fromQualString("aten::slice");
const c10::Symbol kDetach = c10::Symbol::fromQualString("aten::detach");
const c10::Symbol kContiguous = c10::Symbol::fromQualString("aten::contiguous");
const c10::Symbol kTo = c10::Symbol::fromQualString("aten::to");
const c10::Symbol kView = c10::Symbol::fromQualString("aten::view");
const c10::Symbol kReshape = c10::Symbol::fromQualString("aten::reshape");

bool returnsTensor(const Node& node) {
  return node.outputs().size() == 1 && node.output()->type()->kind() == c10::TypeKind::TensorType;
}

std::optional<c10::IValue> constantInput(const Node& node, size_t index) {
  if (index >= node.inputs().size()) return std::nullopt;
  // Not returned directly: an IValue is constructible from an empty c10::optional (as None), so
  // the conversion would make every non-constant a None.
  auto constant = torch::jit::toIValue(node.input(index));
  if (!constant) return std::nullopt;
  return *constant;
}

bool isFullRangeSlice(const Node& node) {
  if (node.kind() != kSlice || node.inputs().size() != 5 || !returnsTensor(node)) return false;
  const auto start = constantInput(node, 2);
  const auto end = constantInput(node, 3);
  const auto step = constantInput(node, 4);
  const bool from_first = start && (start->isNone() || (start->isInt() && start->toInt() == 0));
  const bool to_last =
      end &&
      (end->isNone() || (end->isInt() && end->toInt() == std::numeric_limits<int64_t>::max()));
  return from_first && to_last && step && step->isInt() && step->toInt() == 1;
}

bool isStaticNoOp(const Node& node) {
  return isFullRangeSlice(node) || (node.kind() == kDetach && returnsTensor(node));
}

// A value's named argument when the operator's schema has it (the overloads of `to` differ).
std::optional<c10::IValue> namedConstant(const Node& node, const char* name) {
  const c10::FunctionSchema* schema = node.maybeSchema();
  if (schema == nullptr) return std::nullopt;
  const auto index = schema->argumentIndexWithName(name);
  if (!index) return std::nullopt;
  return constantInput(node, static_cast<size_t>(*index));
}

// A node of the model that computes nothing on the values it saw: its result is described
// exactly as its input (shape, strides, dtype), and a `to` is not asked for a copy.
bool isModelNoOp(const Node& node, const GraphEdit& edit) {
  if (isStaticNoOp(node)) return true;
  const auto kind = node.kind();
  if (kind != kContiguous && kind != kTo && kind != kView && kind != kReshape && kind != kSlice) {
    return false;
  }
  if (!returnsTensor(node) || node.inputs().empty()) return false;
  if (kind == kTo) {
    const auto copy = namedConstant(node, "copy");
    if (!copy || !(copy->isNone() || (copy->isBool() && !copy->toBool()))) return false;
  }
  const auto in = edit.describe(node.input(0));
  const auto out = edit.describe(node.output());
  return in && out && in->kind == "Tensor" && out->kind == "Tensor" && in->shape == out->shape &&
         in->strides == out->strides && in->dtype == out->dtype;
}

std::optional<std::vector<int64_t>> constantSizes(const Value* value) {
  if (auto constant = torch::jit::toIValue(value)) {
    if (constant->isIntList()) return constant->toIntVector();
    return std::nullopt;
  }
  const Node* producer = value->node();
  if (producer->kind() != torch::jit::prim::ListConstruct) return std::nullopt;
  std::vector<int64_t> sizes;
  for (const Value* element : producer->inputs()) {
    auto constant = torch::jit::toIValue(element);
    if (!constant || !constant->isInt()) return std::nullopt;
    sizes.push_back(constant->toInt());
  }
  return sizes;
}

// What a pattern's operator must find in the model to be a no-op there, or nullopt when it is
// not one of those that can be.
std::optional<MatchCheck> conditionalNoOp(const Node& node) {
  using Check = MatchCheck;
  if (!returnsTensor(node) || node.inputs().empty()) return std::nullopt;
  if (node.kind() == kContiguous) {
    const auto format = constantInput(node, 1);
    if (node.inputs().size() > 1 &&
        !(format && (format->isNone() ||
                     (format->isInt() &&
                      format->toInt() == static_cast<int64_t>(c10::MemoryFormat::Contiguous))))) {
      return std::nullopt;
    }
    return Check{Check::Kind::kContiguous, node.input(0)};
  }
  if (node.kind() == kTo) {
    const auto dtype = namedConstant(node, "dtype");
    const auto copy = namedConstant(node, "copy");
    if (namedConstant(node, "device") || namedConstant(node, "other")) return std::nullopt;
    if (!dtype || !dtype->isInt()) return std::nullopt;
    if (copy && !(copy->isNone() || (copy->isBool() && !copy->toBool()))) return std::nullopt;
    Check check{Check::Kind::kDtype, node.input(0)};
    check.dtype = static_cast<c10::ScalarType>(dtype->toInt());
    return check;
  }
  if ((node.kind() == kView || node.kind() == kReshape) && node.inputs().size() == 2) {
    auto sizes = constantSizes(node.input(1));
    if (!sizes) return std::nullopt;
    Check check{Check::Kind::kShape, node.input(0)};
    check.sizes = std::move(*sizes);
    return check;
  }
  return std::nullopt;
}

bool isContiguous(const ValueDesc& desc) {
  int64_t expected = 1;
  for (size_t d = desc.shape.size(); d-- > 0;) {
    if (desc.shape[d] == 1) continue;
    if (d >= desc.strides.size() || desc.strides[d] != expected) return false;
    expected *= desc.shape[d];
  }
  return true;
}

bool hasShape(const ValueDesc& desc, std::vector<int64_t> sizes) {
  if (sizes.size() != desc.shape.size()) return false;
  int64_t numel = 1;
  int64_t known = 1;
  for (const int64_t size : desc.shape) numel *= size;
  auto inferred = sizes.end();
  for (auto it = sizes.begin(); it != sizes.end(); ++it) {
    if (*it == -1 && inferred == sizes.end()) {
      inferred = it;
    } else {
      known *= *it;
    }
  }
  if (inferred != sizes.end()) {
    if (known == 0 || numel % known != 0) return false;
    *inferred = numel / known;
  }
  return sizes == desc.shape;
}

// Nodes in execution order, the ones nested in blocks included, as mutable pointers.
std::vector<Node*> nodesOf(torch::jit::Graph& graph) {
  std::vector<Node*> nodes;
  for (const Node* node : allNodes(graph)) nodes.push_back(const_cast<Node*>(node));
  return nodes;
}

}  // namespace

void removeStaticNoOps(torch::jit::Graph& pattern) {
  bool removed = false;
  for (Node* node : nodesOf(pattern)) {
    if (!isStaticNoOp(*node)) continue;
    node->output()->replaceAllUsesWith(node->input(0));
    node->destroy();
    removed = true;
  }
  if (removed) torch::jit::EliminateDeadCode(pattern.block());
}

namespace {

// Each slice's dim, start and end, when constants, become parameters of the pattern whose
// meaning a check compares.
void compareSliceArgumentsByMeaning(MatchablePattern& form) {
  torch::jit::Graph& graph = *form.graph;
  for (Node* node : nodesOf(graph)) {
    if (node->kind() != kSlice || node->inputs().size() != 5 || !returnsTensor(*node)) continue;
    const std::pair<size_t, MatchCheck::Kind> arguments[] = {{1, MatchCheck::Kind::kSliceDim},
                                                             {2, MatchCheck::Kind::kSliceStart},
                                                             {3, MatchCheck::Kind::kSliceEnd}};
    for (const auto& [index, kind] : arguments) {
      auto constant = constantInput(*node, index);
      if (!constant) continue;
      Value* parameter = graph.addInput("slice_argument")->setType(node->input(index)->type());
      Node* old = node->input(index)->node();
      node->replaceInput(index, parameter);
      if (!old->output()->hasUses()) old->destroy();
      MatchCheck check{kind, parameter};
      check.sliced = node->input(0);
      check.expected = std::move(*constant);
      form.checks.push_back(std::move(check));
    }
  }
}

bool sameSliceArgument(const MatchCheck& check, const c10::IValue& found, const GraphEdit& edit,
                       const torch::jit::Match& match) {
  const c10::IValue& expected = check.expected;
  switch (check.kind) {
    case MatchCheck::Kind::kSliceStart: {
      auto start = [](const c10::IValue& value) -> std::optional<int64_t> {
        if (value.isNone()) return 0;
        if (value.isInt()) return value.toInt();
        return std::nullopt;
      };
      return start(found) && start(found) == start(expected);
    }
    case MatchCheck::Kind::kSliceEnd: {
      auto end = [](const c10::IValue& value) -> std::optional<int64_t> {
        if (value.isNone()) return std::numeric_limits<int64_t>::max();
        if (value.isInt()) return value.toInt();
        return std::nullopt;
      };
      return end(found) && end(found) == end(expected);
    }
    case MatchCheck::Kind::kSliceDim: {
      if (!found.isInt() || !expected.isInt()) return false;
      if (found.toInt() == expected.toInt()) return true;
      auto sliced = match.values_map.find(check.sliced);
      if (sliced == match.values_map.end()) return false;
      const auto desc = edit.describe(sliced->second);
      if (!desc || desc->kind != "Tensor") return false;
      const auto rank = static_cast<int64_t>(desc->shape.size());
      auto normal = [rank](int64_t dim) { return dim < 0 ? dim + rank : dim; };
      return normal(found.toInt()) == normal(expected.toInt());
    }
    default:
      return false;
  }
}

}  // namespace

std::vector<MatchablePattern> matchableForms(torch::jit::Graph& pattern) {
  std::vector<MatchablePattern> forms;
  MatchablePattern written{pattern.copy(), pattern.inputs().size(), {}};
  compareSliceArgumentsByMeaning(written);
  forms.push_back(std::move(written));

  MatchablePattern lenient{pattern.copy(), pattern.inputs().size(), {}};
  for (Node* node : nodesOf(*lenient.graph)) {
    auto check = conditionalNoOp(*node);
    if (!check) continue;
    node->output()->replaceAllUsesWith(node->input(0));
    node->destroy();
    lenient.checks.push_back(std::move(*check));
  }
  if (lenient.checks.empty()) return forms;
  torch::jit::EliminateDeadCode(lenient.graph->block());
  for (const Value* output : lenient.graph->outputs()) {
    if (output->node()->kind() == torch::jit::prim::Param) return forms;
  }
  if (lenient.graph->nodes().begin() == lenient.graph->nodes().end()) return forms;
  compareSliceArgumentsByMeaning(lenient);
  forms.push_back(std::move(lenient));
  return forms;
}

bool checksHold(const MatchablePattern& form, const torch::jit::Match& match,
                const GraphEdit& edit) {
  using Kind = MatchCheck::Kind;
  for (const auto& check : form.checks) {
    auto found = match.values_map.find(check.value);
    if (found == match.values_map.end()) return false;
    if (check.kind == Kind::kSliceDim || check.kind == Kind::kSliceStart ||
        check.kind == Kind::kSliceEnd) {
      auto constant = torch::jit::toIValue(found->second);
      if (!constant || !sameSliceArgument(check, *constant, edit, match)) return false;
      continue;
    }
    const auto desc = edit.describe(found->second);
    if (!desc || desc->kind != "Tensor") return false;
    const bool holds = check.kind == Kind::kContiguous ? isContiguous(*desc)
                       : check.kind == Kind::kDtype    ? desc->dtype == dtypeName(check.dtype)
                                                       : hasShape(*desc, check.sizes);
    if (!holds) return false;
  }
  return true;
}

NoOpBypass::NoOpBypass(GraphEdit& edit) : edit_(edit) {
  for (Node* node : nodesOf(edit.graph())) {
    if (node->outputs().size() != 1 || !node->output()->hasUses()) continue;
    if (!isModelNoOp(*node, edit)) continue;
    Bypassed bypassed{node, {node->inputs().begin(), node->inputs().end()}, node->output()->uses()};
    // Left in place with no inputs and no readers: no match can take it meanwhile.
    node->output()->replaceAllUsesWith(node->input(0));
    node->removeAllInputs();
    bypassed_.push_back(std::move(bypassed));
  }
}

NoOpBypass::~NoOpBypass() {
  // Reached on an error too (a condition that failed): the edit is then thrown away, and what
  // restoring it could throw must not end the process.
  try {
    restore();
  } catch (...) {  // NOLINT(bugprone-empty-catch)
  }
}

void NoOpBypass::restore() {
  // Last set aside first: a chain of no-ops comes back link by link.
  while (!bypassed_.empty()) {
    Bypassed bypassed = std::move(bypassed_.back());
    bypassed_.pop_back();
    Node* node = bypassed.node;
    Value* input = bypassed.inputs[0];
    // A reader a rewrite destroyed is gone; one that survived still reads the no-op's input
    // where it read the no-op (or reads a replacement's value there, and keeps it).
    std::vector<torch::jit::Use> readers;
    for (const auto& reader : bypassed.readers) {
      if (edit_.wasDestroyed(reader.user)) continue;
      const auto& inputs = reader.user->inputs();
      if (reader.offset < inputs.size() && inputs[reader.offset] == input) {
        readers.push_back(reader);
      }
    }
    if (readers.empty()) {
      edit_.destroy(node);
      for (size_t i = 1; i < bypassed.inputs.size(); ++i) {
        edit_.destroyIfUnused(bypassed.inputs[i]->node());
      }
      continue;
    }
    // It never left its place, before every reader and after what it reads.
    for (Value* value : bypassed.inputs) node->addInput(value);
    for (const auto& reader : readers) reader.user->replaceInput(reader.offset, node->output());
  }
}

}  // namespace stickler
