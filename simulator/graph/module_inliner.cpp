#include "simulator/graph/module_inliner.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <torch/csrc/jit/api/function_impl.h>
#include <nlohmann/json.hpp>

#include "simulator/graph/graph_nodes.h"
#include "simulator/support/errors.h"
#include "simulator/support/sequence_alignment.h"

namespace stickler {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::ScopePtr;
using torch::jit::Value;
namespace attr = torch::jit::attr;
namespace prim = torch::jit::prim;

std::string joinPath(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

void setScopeRecursively(Node* node, const ScopePtr& scope) {
  node->setScope(scope);
  for (Block* block : node->blocks()) {
    for (Node* inner : block->nodes()) setScopeRecursively(inner, scope);
  }
}

std::string describeSource(const Node* node) {
  auto position = node->sourceRange().file_line_col();
  if (!position) return "a call without a source position";
  return std::get<0>(*position) + ":" + std::to_string(std::get<1>(*position));
}

class ModuleInliner {
 public:
  explicit ModuleInliner(std::shared_ptr<Graph> graph)
      : graph_(std::move(graph)), self_(graph_->inputs().at(0)) {}

  std::shared_ptr<Graph> run() {
    inlineBlock(graph_->block());
    removeUnusedFunctionConstants(graph_->block());
    return graph_;
  }

 private:
  // Walks the GetAttr chain from a module-typed value back to `self`.
  std::optional<std::string> submodulePath(Value* value) const {
    if (value == self_) return std::string();
    Node* producer = value->node();
    if (producer->kind() != prim::GetAttr) return std::nullopt;
    auto parent = submodulePath(producer->input());
    if (!parent) return std::nullopt;
    return joinPath(*parent, producer->s(attr::name));
  }

  void inlineBlock(Block* block) {
    Node* node = block->nodes().front();
    while (node != block->return_node()) {
      if (node->kind() == prim::CallMethod) {
        node = inlineMethodCall(node);
      } else if (node->kind() == prim::CallFunction) {
        node = inlineFunctionCall(node);
      } else {
        for (Block* inner : node->blocks()) inlineBlock(inner);
        node = node->next();
      }
    }
  }

  // The scripting frontend leaves function constants that nothing calls; they cannot run.
  static void removeUnusedFunctionConstants(Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* node = *it++;
      for (Block* inner : node->blocks()) removeUnusedFunctionConstants(inner);
      if (node->kind() == prim::Constant && !node->hasUses() &&
          node->output()->type()->kind() == c10::TypeKind::FunctionType) {
        node->destroy();
      }
    }
  }

  // Inlines `call` and returns the first inserted node, so nested calls are inlined next.
  Node* inlineMethodCall(Node* call) {
    auto path = submodulePath(call->input(0));
    if (!path) {
      throw UserError("cannot tell which submodule is called at " + describeSource(call) +
                      " (the module value does not come from a chain of attributes)");
    }
    auto class_type = call->input(0)->type()->cast<c10::ClassType>();
    if (!class_type) {
      throw UserError("method call on a non-module value at " + describeSource(call));
    }
    auto& callee = torch::jit::toGraphFunction(class_type->getMethod(call->s(attr::name)));
    // A module calling one of its own helper methods stays in its own scope.
    ScopePtr scope = call->scope();
    if (modulePathOf(*call) != *path) {
      scope = scope->push(c10::Symbol::scope(*path));
    }
    return inlineInScope(call, &callee, scope);
  }

  Node* inlineFunctionCall(Node* call) {
    Node* function_constant = call->input(0)->node();
    auto function_type = call->input(0)->type()->cast<c10::FunctionType>();
    if (!function_type || function_constant->kind() != prim::Constant) {
      throw UserError("call of a function value that is not a constant at " + describeSource(call));
    }
    call->removeInput(0);
    Node* first = inlineInScope(call, &torch::jit::toGraphFunction(*function_type->function()),
                                call->scope());
    if (!function_constant->hasUses()) function_constant->destroy();
    return first;
  }

  Node* inlineInScope(Node* call, torch::jit::GraphFunction* callee, const ScopePtr& scope) {
    Node* before = call->prev();
    Node* after = call->next();
    // false: the plain graph; the "optimized" one is already inlined and lost its paths.
    torch::jit::inlineCallTo(call, callee, /*inline_optimized_graph=*/false);
    for (Node* node = before->next(); node != after; node = node->next()) {
      setScopeRecursively(node, scope);
    }
    return before->next();
  }

  std::shared_ptr<Graph> graph_;
  Value* self_;
};

}  // namespace

std::string operatorWhere(const Node& node) {
  const std::string module = modulePathOf(node);
  return std::string(node.kind().toQualString()) + " in " +
         (module.empty() ? std::string("the model's forward") : module);
}

std::string modulePathOf(const Node& node) {
  // Node::scope() is not const in LibTorch 1.13; reading it does not change the node.
  ScopePtr scope = const_cast<Node&>(node).scope();
  if (!scope || scope->isRoot()) return std::string();
  return scope->name().toUnqualString();
}

void restoreModulePaths(Graph& graph, const std::string& record_json, const std::string& method) {
  auto record = nlohmann::json::parse(record_json, nullptr, /*allow_exceptions=*/false);
  if (method != "forward" && record.is_object()) {
    const auto methods = record.find("methods");
    if (methods == record.end()) return;
    if (!methods->is_object()) throw UserError("its record of module paths is malformed");
    const auto own = methods->find(method);
    if (own == methods->end()) return;
    record = nlohmann::json(*own);  // a record of its own, with its version
  }
  if (!record.is_object() || !record.contains("scopes") || !record.contains("nodes") ||
      !record["scopes"].is_array() || !record["nodes"].is_array()) {
    throw UserError("its record of module paths is malformed");
  }
  if (record.value("version", 0) != 1) {
    throw UserError("its record of module paths has version " + record["version"].dump() +
                    ", which this Stickler does not read (1)");
  }
  std::vector<ScopePtr> scopes;
  std::vector<int> recorded_kinds;
  std::vector<int64_t> recorded_scopes;
  std::unordered_map<std::string, int> kind_ids;
  const auto kindId = [&](const std::string& kind) {
    return kind_ids.emplace(kind, static_cast<int>(kind_ids.size())).first->second;
  };
  try {
    for (const auto& entry : record.at("scopes")) {
      const int64_t parent = entry.at(1).get<int64_t>();
      if (parent < -1 || parent >= static_cast<int64_t>(scopes.size())) {
        throw UserError("its record of module paths names a scope before its parent");
      }
      const ScopePtr base =
          parent < 0 ? graph.current_scope() : scopes[static_cast<size_t>(parent)];
      scopes.push_back(base->push(c10::Symbol::scope(entry.at(0).get<std::string>())));
    }
    for (const auto& entry : record.at("nodes")) {
      const int64_t scope = entry.at(1).get<int64_t>();
      if (scope < -1 || scope >= static_cast<int64_t>(scopes.size())) {
        throw UserError("its record of module paths names a scope it does not have");
      }
      recorded_kinds.push_back(kindId(entry.at(0).get<std::string>()));
      recorded_scopes.push_back(scope);
    }
  } catch (const nlohmann::json::exception&) {
    throw UserError("its record of module paths is malformed");
  }
  std::vector<Node*> nodes;
  std::vector<int> kinds;
  for (const Node* node : allNodes(graph)) {
    if (node->kind() == prim::Constant) continue;
    nodes.push_back(const_cast<Node*>(node));
    kinds.push_back(kindId(node->kind().toQualString()));
  }
  // A load drops nodes (a tuple built and unpacked at once; operators on constants, folded):
  // many recorded nodes may be missing. It hardly adds any: a graph node the record does not
  // have is a sign the two are not the same graph.
  const size_t tolerated = std::max<size_t>(4, kinds.size() / 20);
  const size_t budget = recorded_kinds.size() / 2 + tolerated;
  const auto aligned = commonSubsequence(recorded_kinds, kinds, budget);
  if (!aligned || kinds.size() - aligned->size() > tolerated) {
    throw UserError(
        "its record of module paths does not fit its graph (" +
        std::to_string(recorded_kinds.size()) + " operators recorded, " +
        std::to_string(kinds.size()) + " in the graph, " +
        (aligned ? std::to_string(kinds.size() - aligned->size()) + " of them" : "too many") +
        " not in the record): it was changed after it was saved; save the adapted "
        "model again");
  }
  // Aligned nodes take their recorded module; the rest, the next aligned node's (the nodes a
  // load adds feed the node after them), or the last one's at the end.
  std::vector<std::optional<int64_t>> scope_of(nodes.size());
  for (const auto& [at_record, at_graph] : *aligned)
    scope_of[at_graph] = recorded_scopes[at_record];
  std::optional<int64_t> next;
  for (size_t i = nodes.size(); i-- > 0;) {
    if (scope_of[i])
      next = scope_of[i];
    else
      scope_of[i] = next;
  }
  std::optional<int64_t> last;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (scope_of[i]) last = scope_of[i];
    const int64_t scope = scope_of[i] ? *scope_of[i] : last.value_or(-1);
    if (scope >= 0) nodes[i]->setScope(scopes[static_cast<size_t>(scope)]);
  }
}

std::shared_ptr<Graph> inlineWithModulePaths(const torch::jit::Module& module,
                                             const std::string& method) {
  auto& function = torch::jit::toGraphFunction(module.get_method(method).function());
  return ModuleInliner(function.graph()->copy()).run();
}

}  // namespace stickler
