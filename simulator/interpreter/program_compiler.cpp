#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/ir/ir.h>

#include "simulator/graph/node_info.h"
#include "simulator/interpreter/container_ops.h"
#include "simulator/interpreter/program.h"
#include "simulator/interpreter/shape_only.h"
#include "simulator/support/errors.h"

namespace stickler {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Operation;
using torch::jit::Value;
namespace attr = torch::jit::attr;
namespace prim = torch::jit::prim;

namespace {

// The scopes a node lies in, innermost first (the root scope excluded).
std::vector<torch::jit::Scope*> scopeChain(const Node* node) {
  std::vector<torch::jit::Scope*> chain;
  torch::jit::ScopePtr scope = const_cast<Node*>(node)->scope();
  while (scope && !scope->isRoot()) {
    chain.push_back(scope.get());
    scope = scope->parent();
  }
  return chain;
}

// The node of `block` that contains `node`, or nullptr for the block's return node.
const Node* ancestorIn(const Node* node, const Block* block) {
  while (node->owningBlock() != block) {
    node = node->owningBlock()->owningNode();
    if (node == nullptr) return nullptr;
  }
  return node;
}

// The node whose scope a use or definition counts in: the block's owner for block parameters
// and return values; nullptr (the root) for the graph's own inputs and outputs.
const Node* effectiveNode(const Node* node) {
  if (node->kind() == prim::Param || node->kind() == prim::Return) {
    return node->owningBlock()->owningNode();
  }
  return node;
}

class Compiler {
 public:
  Compiler(const torch::jit::Module& module, torch::jit::Graph& graph, const ModuleTable& modules)
      : graph_(graph), modules_(modules) {
    program_ = std::make_unique<CompiledProgram>();
    program_->self = module._ivalue();
    has_set_attr_ = containsKind(graph.block(), prim::SetAttr);
  }

  std::unique_ptr<CompiledProgram> compile() {
    Value* self = graph_.inputs().at(0);
    constants_[self] = c10::IValue(program_->self);
    hoistConstants(graph_.block());
    scanWeights();
    std::vector<torch::jit::Scope*> root;
    program_->main = compileBlock(graph_.block(), root);
    program_->initial_registers.resize(registers_.size());
    for (const auto& [value, constant] : constants_) {
      program_->initial_registers[registers_.at(value)] = constant;
    }
    collectModuleInterfaces();
    return std::move(program_);
  }

 private:
  static bool containsKind(const Block* block, c10::Symbol kind) {
    for (const Node* node : block->nodes()) {
      if (node->kind() == kind) return true;
      for (const Block* inner : node->blocks()) {
        if (containsKind(inner, kind)) return true;
      }
    }
    return false;
  }

  uint32_t registerOf(const Value* value) {
    auto [it, inserted] = registers_.try_emplace(value, static_cast<uint32_t>(registers_.size()));
    return it->second;
  }

  // Constants, and attribute reads from modules that nothing in the graph reassigns, are
  // resolved once here instead of on every run.
  void hoistConstants(const Block* block) {
    for (const Node* node : block->nodes()) {
      if (node->kind() == prim::Constant) {
        if (node->output()->type()->kind() == c10::TypeKind::FunctionType) continue;
        constants_[node->output()] = torch::jit::toIValue(node->output()).value();
        registerOf(node->output());
      } else if (node->kind() == prim::GetAttr && !has_set_attr_) {
        auto owner = constants_.find(node->input());
        if (owner != constants_.end() && owner->second.isObject()) {
          constants_[node->output()] = owner->second.toObject()->getAttr(node->s(attr::name));
          registerOf(node->output());
        }
      }
      for (const Block* inner : node->blocks()) hoistConstants(inner);
    }
  }

  bool isConstant(const Value* value) const { return constants_.count(value) != 0; }

  // What the weights the graph reads (constants, parameters and buffers of the module) say
  // about how to run it: 16-bit floating ones are computed in float32 (sixteen_bit.h), and ones
  // without storage make it a weightless archive's program (shape_only.h).
  void scanWeights() {
    auto visit = [&](const c10::IValue& value) {
      if (!value.isTensor() || !value.toTensor().defined()) return;
      const at::Tensor& tensor = value.toTensor();
      program_->sixteen_bit_in_float32 |= isSixteenBitFloat(tensor.scalar_type());
      program_->weightless |= isStoragelessWeight(tensor);
    };
    for (const auto& [value, constant] : constants_) visit(constant);
    const torch::jit::Module module(program_->self);
    for (const auto& tensor : module.parameters()) visit(tensor);
    for (const auto& tensor : module.buffers()) visit(tensor);
  }

  uint32_t callOf(torch::jit::Scope* scope) {
    auto [it, inserted] = call_index_.try_emplace(scope, program_->calls.size());
    if (inserted) {
      ModuleCall call;
      call.path = scope->name().toUnqualString();
      call.class_name = modules_.classOf(call.path);
      call.depth = static_cast<int>(scope->getDepth()) - 1;
      program_->calls.push_back(std::move(call));
    }
    return static_cast<uint32_t>(it->second);
  }

  // Exits from `from` up to the common ancestor, then enters down to `to` (chains innermost
  // first).
  std::vector<Boundary> transition(const std::vector<torch::jit::Scope*>& from,
                                   const std::vector<torch::jit::Scope*>& to) {
    size_t common = 0;
    while (common < from.size() && common < to.size() &&
           from[from.size() - 1 - common] == to[to.size() - 1 - common]) {
      ++common;
    }
    std::vector<Boundary> boundaries;
    for (size_t i = 0; i + common < from.size(); ++i)
      boundaries.push_back({false, callOf(from[i])});
    for (size_t i = to.size() - common; i-- > 0;) boundaries.push_back({true, callOf(to[i])});
    return boundaries;
  }

  BlockCode compileBlock(const Block* block, const std::vector<torch::jit::Scope*>& owner_chain) {
    BlockCode code;
    for (const Value* input : block->inputs()) code.inputs.push_back(registerOf(input));
    std::vector<torch::jit::Scope*> current = owner_chain;
    for (const Node* node : block->nodes()) {
      if (!node->outputs().empty() && std::all_of(node->outputs().begin(), node->outputs().end(),
                                                  [&](const Value* v) { return isConstant(v); })) {
        continue;
      }
      auto chain = scopeChain(node);
      Step step = compileNode(node, chain);
      step.boundaries = transition(current, chain);
      step.call = chain.empty() ? -1 : static_cast<int32_t>(callOf(chain.front()));
      current = std::move(chain);
      code.steps.push_back(std::move(step));
      ++program_->step_count;
    }
    code.exits_at_end = transition(current, owner_chain);
    for (const Value* output : block->outputs()) code.outputs.push_back(registerOf(output));
    planReleases(block, code);
    return code;
  }

  Step compileNode(const Node* node, const std::vector<torch::jit::Scope*>& chain) {
    Step step;
    step.node = node;
    for (const Value* input : node->inputs()) step.inputs.push_back(registerOf(input));
    for (const Value* output : node->outputs()) step.outputs.push_back(registerOf(output));
    if (node->kind() == prim::If || node->kind() == prim::Loop) {
      step.kind = node->kind() == prim::If ? StepKind::kIf : StepKind::kLoop;
      for (const Block* inner : node->blocks()) step.blocks.push_back(compileBlock(inner, chain));
      return step;
    }
    step.operation = operationFor(node);
    if (program_->sixteen_bit_in_float32) {
      step.widening = wideningFor(*node);
      step.may_run_linear_in_slices = mayRunLinearInSlices(*node);
    }
    step.may_run_on_shapes = program_->weightless && computesOnTensors(*node);
    if (const Value* scalar = scalarBehindNumToTensor(node))
      step.scalar_source = registerOf(scalar);
    if (node->kind() == prim::NumToTensor && !node->output()->uses().empty() &&
        std::all_of(node->output()->uses().begin(), node->output()->uses().end(),
                    [](const torch::jit::Use& use) { return scalarBehindNumToTensor(use.user); })) {
      step.skip_unobserved = true;
    }
    return step;
  }

  // n, when `node` is aten::Int(prim::NumToTensor(n)) for an int n (or aten::Float of a float).
  static const Value* scalarBehindNumToTensor(const Node* node) {
    const bool to_int = node->kind() == torch::jit::aten::Int;
    if ((!to_int && node->kind() != torch::jit::aten::Float) || node->inputs().size() != 1) {
      return nullptr;
    }
    const Node* producer = node->input()->node();
    if (producer->kind() != prim::NumToTensor) return nullptr;
    const auto kind = producer->input()->type()->kind();
    return kind == (to_int ? c10::TypeKind::IntType : c10::TypeKind::FloatType) ? producer->input()
                                                                                : nullptr;
  }

  Operation operationFor(const Node* node) {
    if (Operation container = containerOperation(*node)) return container;
    if (node->maybeOperator() == nullptr) {
      std::ostringstream text;
      text << *node;
      throw UserError("the interpreter cannot execute " + describeNode(*node, modules_) +
                      ": it has no operator (" + text.str() + ")");
    }
    return node->getOperation();
  }

  // Frees each value defined in this block after the step that reads it last, so memory stays
  // near what the current layer needs. Values read by a nested block count as read by the
  // step that owns that block; values read by the block's return are freed once it is copied.
  void planReleases(const Block* block, BlockCode& code) {
    std::unordered_map<const Node*, size_t> position;
    size_t index = 0;
    for (const Step& step : code.steps) position[step.node] = index++;

    auto plan = [&](const Value* value, std::optional<size_t> defined_at) {
      if (isConstant(value)) return;
      std::optional<size_t> last_use = defined_at;
      bool read_by_return = false;
      std::vector<const Node*> readers;
      for (const auto& use : value->uses()) {
        readers.push_back(use.user);
        // An aten::Int that bypasses its NumToTensor reads this value itself.
        if (use.user->kind() == prim::NumToTensor) {
          for (const auto& inner : use.user->output()->uses()) {
            if (scalarBehindNumToTensor(inner.user) == value) readers.push_back(inner.user);
          }
        }
      }
      for (const Node* reader : readers) {
        const Node* user = ancestorIn(reader, block);
        if (user == nullptr || user->kind() == prim::Return) {
          read_by_return = true;
          continue;
        }
        auto it = position.find(user);
        if (it != position.end()) last_use = std::max(last_use.value_or(0), it->second);
      }
      const uint32_t reg = registers_.at(value);
      if (read_by_return || !last_use) {
        code.release_at_end.push_back(reg);
      } else {
        code.steps[*last_use].release.push_back(reg);
      }
    };
    for (const Value* input : block->inputs()) {
      if (block == graph_.block() && input == graph_.inputs().at(0)) continue;  // self
      plan(input, std::nullopt);
    }
    for (const Step& step : code.steps) {
      for (const Value* output : step.node->outputs()) plan(output, position.at(step.node));
    }
    for (Step& step : code.steps) {
      step.movable.assign(step.inputs.size(), 0);
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        const uint32_t reg = step.inputs[i];
        step.movable[i] = std::count(step.release.begin(), step.release.end(), reg) == 1 &&
                          std::count(step.inputs.begin(), step.inputs.end(), reg) == 1;
      }
    }
  }

  // What each module call reads from before it and hands on after it.
  void collectModuleInterfaces() {
    const size_t count = program_->calls.size();
    std::vector<std::vector<const Value*>> inputs(count), outputs(count);
    std::vector<std::unordered_set<const Value*>> seen_in(count), seen_out(count);
    std::unordered_map<const Node*, std::vector<torch::jit::Scope*>> chains;
    auto chainOf = [&](const Node* node) -> const std::vector<torch::jit::Scope*>& {
      auto it = chains.find(node);
      if (it == chains.end()) {
        it =
            chains.emplace(node, node ? scopeChain(node) : std::vector<torch::jit::Scope*>()).first;
      }
      return it->second;
    };
    auto contains = [](const std::vector<torch::jit::Scope*>& chain, torch::jit::Scope* scope) {
      return std::find(chain.begin(), chain.end(), scope) != chain.end();
    };
    auto visitValue = [&](const Value* value) {
      if (isConstant(value)) return;
      const auto& defined = chainOf(effectiveNode(value->node()));
      for (const auto& use : value->uses()) {
        const auto& used = chainOf(effectiveNode(use.user));
        for (torch::jit::Scope* scope : defined) {
          if (contains(used, scope)) continue;
          auto it = call_index_.find(scope);
          if (it != call_index_.end() && seen_out[it->second].insert(value).second) {
            outputs[it->second].push_back(value);
          }
        }
        for (torch::jit::Scope* scope : used) {
          if (contains(defined, scope)) continue;
          auto it = call_index_.find(scope);
          if (it != call_index_.end() && seen_in[it->second].insert(value).second) {
            inputs[it->second].push_back(value);
          }
        }
      }
    };
    std::function<void(const Block*)> visitBlock = [&](const Block* block) {
      for (const Value* input : block->inputs()) visitValue(input);
      for (const Node* node : block->nodes()) {
        for (const Value* output : node->outputs()) visitValue(output);
        for (const Block* inner : node->blocks()) visitBlock(inner);
      }
    };
    visitBlock(graph_.block());
    program_->call_inputs.resize(count);
    program_->call_outputs.resize(count);
    for (size_t i = 0; i < count; ++i) {
      program_->calls[i].inputs = inputs[i];
      program_->calls[i].outputs = outputs[i];
      for (const Value* v : inputs[i]) program_->call_inputs[i].push_back(registers_.at(v));
      for (const Value* v : outputs[i]) program_->call_outputs[i].push_back(registers_.at(v));
    }
  }

  torch::jit::Graph& graph_;
  const ModuleTable& modules_;
  std::unique_ptr<CompiledProgram> program_;
  bool has_set_attr_ = false;
  std::unordered_map<const Value*, uint32_t> registers_;
  std::unordered_map<const Value*, c10::IValue> constants_;
  std::unordered_map<torch::jit::Scope*, size_t> call_index_;
};

}  // namespace

std::unique_ptr<CompiledProgram> compileProgram(const torch::jit::Module& module,
                                                torch::jit::Graph& graph,
                                                const ModuleTable& modules) {
  return Compiler(module, graph, modules).compile();
}

}  // namespace stickler
