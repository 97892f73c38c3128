#include "adapters/engine/graph_rewrite.h"

#include <algorithm>
#include <unordered_set>

#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "adapters/engine/adapter_sandbox.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// A stand-in for a matched value with what the condition may ask of it: a meta tensor has the
// recorded shape and dtype but no storage; constants are themselves.
std::optional<c10::IValue> conditionArgument(const GraphEdit& edit, const Value* value) {
  if (auto constant = torch::jit::toIValue(value)) return constant;
  auto desc = edit.describe(value);
  if (!desc) return std::nullopt;
  if (desc->kind == "Tensor") {
    auto weight = edit.constantOrWeight(value);
    if (weight && weight->isTensor()) return weight;
    const auto dtype = dtypeFromName(desc->dtype);
    const c10::ScalarType type = dtype ? toScalarType(*dtype) : c10::kFloat;
    return at::empty(desc->shape, at::TensorOptions().dtype(type).device(at::kMeta));
  }
  if (desc->kind == "int") return c10::IValue(static_cast<int64_t>(std::stoll(desc->value)));
  if (desc->kind == "float") return c10::IValue(std::stod(desc->value));
  if (desc->kind == "bool") return c10::IValue(desc->value == "true" || desc->value == "1");
  return std::nullopt;
}

// The condition's verdict on every match, decided before anything changes and in a worker:
// adapter code never runs in the server's process.
std::vector<ConditionVerdict> conditionVerdicts(const CompiledRewrite& rewrite,
                                                const GraphEdit& edit,
                                                const std::vector<std::vector<Value*>>& inputs,
                                                const std::string& adapter_path) {
  if (rewrite.condition == nullptr) {
    return std::vector<ConditionVerdict>(inputs.size(), {ConditionVerdict::Kind::kHolds, ""});
  }
  std::vector<std::optional<std::vector<c10::IValue>>> arguments;
  for (const auto& values : inputs) {
    std::optional<std::vector<c10::IValue>> stack;
    if (std::find(values.begin(), values.end(), nullptr) == values.end()) {
      stack.emplace();
      for (const Value* value : values) {
        auto argument = conditionArgument(edit, value);
        if (!argument) {  // nothing known about the value: do not guess
          stack.reset();
          break;
        }
        stack->push_back(*argument);
      }
    }
    arguments.push_back(std::move(stack));
  }
  return runConditionSandboxed(*rewrite.condition, arguments, adapter_path);
}

// Values that the replacement will read and that the pattern reads too: the matched inputs.
std::vector<Value*> matchedInputs(const torch::jit::Graph& pattern,
                                  const torch::jit::Match& match) {
  std::vector<Value*> inputs;
  for (const Value* input : pattern.inputs()) {
    auto found = match.values_map.find(input);
    inputs.push_back(found == match.values_map.end() ? nullptr : found->second);
  }
  return inputs;
}

}  // namespace

RewriteCount applyRewrite(const CompiledRewrite& rewrite, GraphEdit& edit,
                          const std::string& adapter_path) {
  RewriteCount count;
  torch::jit::Graph& graph = edit.graph();
  giveEachUseItsOwnConstant(graph);
  const auto matches = torch::jit::findPatternMatches(*rewrite.pattern, graph);
  std::vector<std::vector<Value*>> inputs_of;
  for (const auto& match : matches) inputs_of.push_back(matchedInputs(*rewrite.pattern, match));
  const std::vector<ConditionVerdict> verdicts =
      conditionVerdicts(rewrite, edit, inputs_of, adapter_path);
  size_t index = 0;
  std::unordered_set<const Node*> taken;  // a node is rewritten by one match at most
  for (const auto& match : matches) {
    const ConditionVerdict& verdict = verdicts[index];
    const std::vector<Value*>& inputs = inputs_of[index++];
    // Constants may be shared by several matches (pooled within a module); operators not.
    auto isOperator = [](const Node* node) { return node->kind() != torch::jit::prim::Constant; };
    const bool overlaps = std::any_of(
        match.nodes_map.begin(), match.nodes_map.end(),
        [&](const auto& pair) { return isOperator(pair.second) && taken.count(pair.second); });
    if (overlaps) continue;
    if (std::find(inputs.begin(), inputs.end(), nullptr) != inputs.end()) continue;
    if (verdict.kind == ConditionVerdict::Kind::kFailed) {
      throw UserError(adapter_path + ": condition failed on a match: " + verdict.message);
    }
    if (verdict.kind == ConditionVerdict::Kind::kTurnedDown) {
      ++count.refused_by_condition;
      continue;
    }
    for (const auto& pair : match.nodes_map) {
      if (isOperator(pair.second)) taken.insert(pair.second);
    }

    Node* anchor = match.anchor;
    Value* matched_output = match.values_map.at(rewrite.pattern->outputs().at(0));
    Node* before = anchor->prev();
    std::vector<Value*> outputs;
    {
      torch::jit::WithInsertPoint insert_point(anchor);
      torch::jit::WithCurrentScope scope(graph, anchor->scope());
      outputs = torch::jit::insertGraph(graph, *rewrite.replacement, inputs);
    }
    for (Node* node = before->next(); node != anchor; node = node->next()) {
      node->setSourceRange(anchor->sourceRange());
      if (node->kind() != torch::jit::prim::Constant) edit.noteAdded(node);
    }
    outputs.at(0)->setType(matched_output->type());
    matched_output->replaceAllUsesWith(outputs.at(0));
    // The matched operators, last first, so that each one's users are gone before it; the
    // constants they read go afterwards, once, when nothing else reads them.
    std::vector<Node*> matched;
    std::unordered_set<Node*> constants;
    for (const auto& pair : match.nodes_map) {
      Node* node = pair.second;
      if (node->kind() == torch::jit::prim::Constant) {
        constants.insert(node);
      } else if (node->kind() != torch::jit::prim::Param &&
                 node->kind() != torch::jit::prim::Return) {
        matched.push_back(node);
      }
    }
    std::sort(matched.begin(), matched.end(),
              [](const Node* a, const Node* b) { return b->isBefore(a); });
    for (Node* node : matched) {
      for (Value* input : node->inputs()) {
        if (input->node()->kind() == torch::jit::prim::Constant) constants.insert(input->node());
      }
      bool used = false;
      for (const Value* output : node->outputs()) used = used || output->hasUses();
      if (!used) edit.destroy(node);
    }
    for (Node* constant : constants) {
      if (!constant->output()->hasUses()) constant->destroy();
    }
    ++edit.change().rewrites;
  }
  return count;
}

}  // namespace stickler
