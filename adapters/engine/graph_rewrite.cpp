#include "adapters/engine/graph_rewrite.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "adapters/engine/adapter_sandbox.h"
#include "adapters/engine/fixed_value_folding.h"
#include "adapters/engine/no_match_explanation.h"
#include "adapters/engine/traced_no_ops.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// A stand-in for a matched value with what the condition may ask of it: a meta tensor has the
// recorded shape and dtype but no storage; constants are themselves; lists and tuples the graph
// builds (the `List[int]` of a view's sizes) are built from their elements.
std::optional<c10::IValue> conditionArgument(const GraphEdit& edit, const Value* value) {
  if (auto constant = torch::jit::toIValue(value)) return constant;
  const Node* producer = value->node();
  if (producer->kind() == torch::jit::prim::ListConstruct) {
    const auto list_type = value->type()->cast<c10::ListType>();
    if (!list_type) return std::nullopt;
    c10::impl::GenericList list(list_type->getElementType());
    for (const Value* element : producer->inputs()) {
      auto argument = conditionArgument(edit, element);
      if (!argument) return std::nullopt;
      list.push_back(std::move(*argument));
    }
    return c10::IValue(std::move(list));
  }
  if (producer->kind() == torch::jit::prim::TupleConstruct) {
    std::vector<c10::IValue> elements;
    for (const Value* element : producer->inputs()) {
      auto argument = conditionArgument(edit, element);
      if (!argument) return std::nullopt;
      elements.push_back(std::move(*argument));
    }
    return c10::IValue(c10::ivalue::Tuple::create(std::move(elements)));
  }
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
  if (desc->kind == "None") return c10::IValue();
  return std::nullopt;
}

// An argument as a person reads it: tensors by dtype and shape (their values are not what a
// condition sees of an activation), everything else as written in Python.
std::string argumentText(const c10::IValue& argument) {
  if (argument.isTensor()) {
    const at::Tensor& tensor = argument.toTensor();
    std::string shape;
    for (const int64_t size : tensor.sizes())
      shape += (shape.empty() ? "" : ", ") + std::to_string(size);
    return std::string(tensor.is_meta() ? "Tensor" : "weight Tensor") + "(" +
           dtypeName(tensor.scalar_type()) + ", [" + shape + "])";
  }
  if (argument.isList() || argument.isTuple()) {
    const bool list = argument.isList();
    const auto elements =
        list ? argument.toListRef().vec() : argument.toTupleRef().elements().vec();
    std::string text;
    for (const auto& element : elements) text += (text.empty() ? "" : ", ") + argumentText(element);
    return list ? "[" + text + "]" : "(" + text + (elements.size() == 1 ? ",)" : ")");
  }
  if (argument.isNone()) return "None";
  if (argument.isBool()) return argument.toBool() ? "True" : "False";
  std::ostringstream text;
  text << argument;
  return text.str();
}

// Where a match sits and what its condition was called with, for a match it turned down.
std::string turnedDownText(const CompiledRewrite& rewrite, const GraphEdit& edit,
                           const torch::jit::Match& match, const std::vector<Value*>& inputs,
                           const std::optional<std::vector<c10::IValue>>& arguments) {
  const Node* anchor = match.anchor;
  std::string text = operatorWhere(*anchor) + ": ";
  const auto& parameters = rewrite.condition->getSchema().arguments();
  if (!arguments) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (conditionArgument(edit, inputs[i])) continue;
      return text + "nothing is known about `" + parameters.at(i).name() +
             "` (a value an earlier rewrite created, or one the example inputs never reached), "
             "so the condition did not run";
    }
  }
  std::string call;
  for (size_t i = 0; arguments && i < arguments->size(); ++i) {
    call +=
        (call.empty() ? "" : ", ") + parameters.at(i).name() + "=" + argumentText(arguments->at(i));
  }
  return text + "condition(" + call + ") returned False";
}

// The condition's arguments for every match: nullopt when something about a matched value is
// unknown (the match is then turned down without running anything).
std::vector<std::optional<std::vector<c10::IValue>>> conditionArguments(
    const GraphEdit& edit, const std::vector<std::vector<Value*>>& inputs) {
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
  return arguments;
}

// Values that the replacement will read and that the pattern reads too: the matched inputs.
std::vector<Value*> matchedInputs(const MatchablePattern& form, const torch::jit::Match& match) {
  std::vector<Value*> inputs;
  for (size_t i = 0; i < form.parameters; ++i) {
    const Value* input = form.graph->inputs()[i];
    auto found = match.values_map.find(input);
    inputs.push_back(found == match.values_map.end() ? nullptr : found->second);
  }
  return inputs;
}

// Whether a value the pattern returns besides its first is read before the pattern's last
// operator: the replacement is inserted there, so that read would come before its value.
bool returnedValueReadEarly(const torch::jit::Graph& pattern, const torch::jit::Match& match) {
  const Node* anchor = match.anchor;
  for (size_t i = 1; i < pattern.outputs().size(); ++i) {
    for (const auto& use : match.values_map.at(pattern.outputs()[i])->uses()) {
      const Node* user = use.user;
      while (user->owningBlock() != anchor->owningBlock() && user->owningBlock()->owningNode()) {
        user = user->owningBlock()->owningNode();
      }
      if (user->kind() == torch::jit::prim::Return || user == anchor) continue;
      if (user->owningBlock() != anchor->owningBlock() || user->isBefore(anchor)) return true;
    }
  }
  return false;
}

// A match and the form of the pattern it is a match of.
struct FoundMatch {
  torch::jit::Match match;
  const MatchablePattern* form;
};

// Every form's matches that pass its checks, in the order of the forms: a later form's match of
// nodes an earlier one took is then never rewritten.
std::vector<FoundMatch> findMatches(const CompiledRewrite& rewrite, const GraphEdit& edit,
                                    torch::jit::Graph& graph) {
  std::vector<FoundMatch> found;
  for (const MatchablePattern& form : rewrite.forms) {
    for (auto& match : torch::jit::findPatternMatches(*form.graph, graph)) {
      if (checksHold(form, match, edit)) found.push_back({std::move(match), &form});
    }
  }
  return found;
}

}  // namespace

RewriteCount applyRewrite(const CompiledRewrite& rewrite, GraphEdit& edit,
                          const AdapterFile& adapter) {
  const std::string& adapter_path = adapter.path;
  RewriteCount count;
  torch::jit::Graph& graph = edit.graph();
  giveEachUseItsOwnConstant(graph);
  // Matched as if the model's no-ops were not there; those a rewrite did not take come back.
  NoOpBypass bypass(edit);
  const std::vector<FoundMatch> matches = findMatches(rewrite, edit, graph);
  if (matches.empty()) {
    for (const PartialMatch& partial : closestPartialMatches(*rewrite.forms.front().graph, graph)) {
      count.closest.push_back(partialMatchText(partial));
    }
    return count;
  }
  std::vector<std::vector<Value*>> inputs_of;
  for (const auto& found : matches) inputs_of.push_back(matchedInputs(*found.form, found.match));
  // Decided for every match before anything changes, in a sandbox worker: a condition is code
  // that runs on every model the adapter is tried on.
  std::vector<std::optional<std::vector<c10::IValue>>> arguments;
  std::vector<ConditionVerdict> verdicts(matches.size(), {ConditionVerdict::Kind::kHolds, ""});
  if (rewrite.condition != nullptr) {
    arguments = conditionArguments(edit, inputs_of);
    verdicts = runCondition(adapter, *rewrite.condition, arguments);
  }
  size_t index = 0;
  std::unordered_set<const Node*> taken;  // a node is rewritten by one match at most
  std::vector<Node*> inserted;            // every replacement's nodes, in order
  for (const auto& [match, form] : matches) {
    const torch::jit::Graph& pattern = *form->graph;
    const ConditionVerdict& verdict = verdicts[index];
    const std::vector<Value*>& inputs = inputs_of[index++];
    // Constants may be shared by several matches (pooled within a module); operators not.
    auto isOperator = [](const Node* node) { return node->kind() != torch::jit::prim::Constant; };
    const bool overlaps = std::any_of(
        match.nodes_map.begin(), match.nodes_map.end(),
        [&](const auto& pair) { return isOperator(pair.second) && taken.count(pair.second); });
    if (overlaps) continue;
    if (std::find(inputs.begin(), inputs.end(), nullptr) != inputs.end()) continue;
    if (returnedValueReadEarly(pattern, match)) continue;
    if (verdict.kind == ConditionVerdict::Kind::kFailed) {
      throw UserError(adapter_path + ": condition failed on a match: " + verdict.message);
    }
    if (verdict.kind == ConditionVerdict::Kind::kTurnedDown) {
      if (count.turned_down.size() < kTurnedDownShown) {
        count.turned_down.push_back(
            turnedDownText(rewrite, edit, match, inputs, arguments[index - 1]));
      }
      ++count.refused_by_condition;
      continue;
    }
    for (const auto& pair : match.nodes_map) {
      if (isOperator(pair.second)) taken.insert(pair.second);
    }

    Node* anchor = match.anchor;
    Node* before = anchor->prev();
    std::vector<Value*> outputs;
    {
      torch::jit::WithInsertPoint insert_point(anchor);
      torch::jit::WithCurrentScope scope(graph, anchor->scope());
      outputs = torch::jit::insertGraph(graph, *rewrite.replacement, inputs);
    }
    // Each value the pattern returns (a topk's values and indices) is replaced by the
    // replacement's value in the same place.
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* matched_output = match.values_map.at(pattern.outputs().at(i));
      outputs[i]->setType(matched_output->type());
      matched_output->replaceAllUsesWith(outputs[i]);
    }
    for (Node* node = before->next(); node != anchor; node = node->next()) {
      node->setSourceRange(anchor->sourceRange());
      inserted.push_back(node);
    }
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
  bypass.restore();
  // Then what the replacements compute from constants, weights and fixed sizes, once (in one
  // worker for code no one has reviewed).
  const FoldResult fold = foldFixedValues(edit, inserted);
  edit.change().folded += fold.folded;
  auto& not_folded = edit.change().not_folded;
  not_folded.insert(not_folded.end(), fold.not_folded.begin(), fold.not_folded.end());
  if (fold.fixed_shapes) edit.change().fixes_shapes = true;
  for (Node* node : inserted) {
    if (fold.destroyed.count(node)) continue;
    if (node->kind() != torch::jit::prim::Constant) {
      edit.noteAdded(node);
    } else if (!node->output()->hasUses()) {
      node->destroy();
    }
  }
  return count;
}

}  // namespace stickler
