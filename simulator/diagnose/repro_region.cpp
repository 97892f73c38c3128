#include "simulator/diagnose/repro_region.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"
#include "simulator/support/errors.h"

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

std::unordered_set<const Node*> nodesWithin(const Region& region) {
  std::unordered_set<const Node*> within;
  std::vector<const Node*> pending(region.nodes.begin(), region.nodes.end());
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    within.insert(node);
    for (const torch::jit::Block* block : node->blocks()) {
      for (const Node* inner : block->nodes()) pending.push_back(inner);
    }
  }
  return within;
}

std::vector<const Value*> boundaryInputs(const Region& region,
                                         const std::unordered_set<const Node*>& within) {
  std::vector<const Value*> boundary;
  std::unordered_set<const Value*> seen;
  // Produced inside the region, block parameters included (a block may hand one straight back).
  auto inside = [&](const Value* value) {
    return within.count(value->node()) ||
           (value->node()->kind() == prim::Param &&
            value->node()->owningBlock() != value->owningGraph()->block());
  };
  std::vector<const Node*> ordered;
  std::function<void(const Node*)> visit = [&](const Node* node) {
    ordered.push_back(node);
    for (const torch::jit::Block* block : node->blocks()) {
      for (const Node* inner : block->nodes()) visit(inner);
      for (const Value* output : block->outputs()) {
        if (!inside(output) && seen.insert(output).second) boundary.push_back(output);
      }
    }
  };
  for (const Node* node : region.nodes) visit(node);
  for (const Node* node : ordered) {
    for (const Value* input : node->inputs()) {
      if (!inside(input) && seen.insert(input).second) boundary.push_back(input);
    }
  }
  return boundary;
}

Region operatorRegion(const Node& node) {
  return {{&node}, modulePathOf(node), "operator"};
}

Region moduleRegion(const LoadedModel& model, const std::string& path) {
  Region region{{}, path, "module"};
  for (const Node* node : model.graph->nodes()) {
    if (node->kind() == prim::Constant || node->kind() == prim::GetAttr) continue;
    bool inside = isWithin(modulePathOf(*node), path);
    for (const Node* nested : nodesWithin({{node}, "", ""})) {
      inside = inside || isWithin(modulePathOf(*nested), path);
    }
    if (inside) region.nodes.push_back(node);
  }
  return region;
}

namespace {

// The values `nodes` define that a node outside `within` (or the graph's return) reads.
std::vector<const Value*> readOutside(const std::vector<const Node*>& nodes,
                                      const std::unordered_set<const Node*>& within) {
  std::vector<const Value*> outputs;
  for (const Node* node : nodes) {
    for (const Value* output : node->outputs()) {
      const auto& uses = output->uses();
      if (std::any_of(uses.begin(), uses.end(),
                      [&](const torch::jit::Use& use) { return !within.count(use.user); })) {
        outputs.push_back(output);
      }
    }
  }
  return outputs;
}

std::optional<DType> dtypeOf(const at::Tensor& tensor) {
  return dtypeFromName(dtypeName(tensor.scalar_type()));
}

// "layers" for `path` "model" and a node at "model.layers.0.mlp"; "" for a node of `path` itself.
std::string childOf(const std::string& path, const std::string& node_path) {
  if (node_path == path) return "";
  const std::string rest = path.empty() ? node_path : node_path.substr(path.size() + 1);
  return rest.substr(0, rest.find('.'));
}

class Outliner {
 public:
  Outliner(const LoadedModel& model, bool keep_paths,
           std::unordered_map<const Value*, c10::IValue> constants)
      : model_(model), keep_paths_(keep_paths), constants_(std::move(constants)) {}

  // The repro module: forward takes `activations` (captured values, in order) and returns the
  // region's `outputs`.
  ReproModule build(const std::vector<const Node*>& nodes, const std::vector<const Value*>& inputs,
                    const std::vector<c10::IValue>& values,
                    const std::vector<const Value*>& outputs) {
    ReproModule repro{newModule(""), {}, {}};
    auto graph = std::make_shared<torch::jit::Graph>();
    Value* self = graph->addInput("self");
    self->setType(repro.module.type());
    std::unordered_map<const Value*, Value*> env;
    auto addCaptured = [&](const at::Tensor& tensor) {
      const std::string name = "input" + std::to_string(repro.inputs.size());
      Value* input = graph->addInput(name);
      input->setType(c10::TensorType::create(tensor));
      auto dtype = dtypeOf(tensor);
      if (!dtype) throw UserError("cannot capture a " + dtypeName(tensor.scalar_type()) + " input");
      repro.inputs.push_back({name, tensor.sizes().vec(), *dtype, InputKind::kCaptured});
      repro.values.push_back(tensor);
      return input;
    };
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (values[i].isTensor()) {
        env[inputs[i]] = addCaptured(values[i].toTensor());
      } else {  // a list of activations: each one an input of its own
        std::vector<Value*> elements;
        for (const at::Tensor& tensor : values[i].toTensorVector()) {
          elements.push_back(addCaptured(tensor));
        }
        env[inputs[i]] =
            graph->insertNode(graph->createList(c10::TensorType::get(), elements))->output();
      }
    }
    if (repro.inputs.empty()) {
      throw UserError("the operator reads no activation to capture: a repro would have no input");
    }
    fill(*graph, self, repro.module, "", nodes, env, outputs);
    addMethod(repro.module, "forward", graph);
    return repro;
  }

 private:
  torch::jit::Module newModule(const std::string& path) {
    std::string name = path.empty() ? "Repro" : model_.modules.classOf(path);
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    }
    return torch::jit::Module(
        c10::QualifiedName("__torch__.stickler.repro.m" + std::to_string(modules_++) + "." + name),
        unit_);
  }

  void addMethod(torch::jit::Module& module, const std::string& name,
                 const std::shared_ptr<torch::jit::Graph>& graph) {
    module.type()->addMethod(
        unit_->create_function(c10::QualifiedName(*module.type()->name(), name), graph));
  }

  std::string pathOf(const Node* node) const { return keep_paths_ ? modulePathOf(*node) : ""; }

  // The values `group` reads from outside itself (but constants) and the values it defines that
  // something outside it reads.
  std::pair<std::vector<const Value*>, std::vector<const Value*>> interfaceOf(
      const std::vector<const Node*>& group) const {
    const Region region{group, "", ""};
    const std::unordered_set<const Node*> within = nodesWithin(region);
    std::vector<const Value*> inputs;
    for (const Value* value : boundaryInputs(region, within)) {
      if (!constants_.count(value)) inputs.push_back(value);
    }
    return {inputs, readOutside(group, within)};
  }

  // Appends `nodes` (all within `path`) to `graph`, the body of a method of `module`: nodes of
  // `path` itself are copied, each run of nodes of one child module becomes a call of a method of
  // that child, built the same way. Then returns `outputs`.
  void fill(torch::jit::Graph& graph, Value* self, torch::jit::Module& module,
            const std::string& path, const std::vector<const Node*>& nodes,
            std::unordered_map<const Value*, Value*>& env,
            const std::vector<const Value*>& outputs) {
    auto lookup = [&](const Value* value) -> Value* {
      if (auto found = env.find(value); found != env.end()) return found->second;
      auto constant = constants_.find(value);
      if (constant == constants_.end()) {
        throw UserError("the repro cannot source a value of %" + value->debugName());
      }
      return env[value] = graph.insertConstant(constant->second);
    };
    for (size_t i = 0; i < nodes.size();) {
      const std::string child = childOf(path, pathOf(nodes[i]));
      if (child.empty()) {
        Node* copy = graph.insertNode(graph.createClone(
            const_cast<Node*>(nodes[i]), [&](Value* value) { return lookup(value); }));
        for (size_t o = 0; o < copy->outputs().size(); ++o)
          env[nodes[i]->output(o)] = copy->output(o);
        ++i;
        continue;
      }
      size_t j = i;
      while (j < nodes.size() && childOf(path, pathOf(nodes[j])) == child) ++j;
      const std::vector<const Node*> group(nodes.begin() + static_cast<ptrdiff_t>(i),
                                           nodes.begin() + static_cast<ptrdiff_t>(j));
      const auto [group_inputs, group_outputs] = interfaceOf(group);
      const std::string child_path = path.empty() ? child : path + "." + child;
      // A child called twice gets a method per call, under the same attribute, so both calls
      // keep its path.
      torch::jit::Module sub =
          module.hasattr(child) ? module.attr(child).toModule() : newModule(child_path);
      if (!module.hasattr(child)) module.register_module(child, sub);
      const int calls = calls_[child_path]++;
      const std::string method = calls == 0 ? "forward" : "forward_" + std::to_string(calls);
      auto body = std::make_shared<torch::jit::Graph>();
      Value* sub_self = body->addInput("self");
      sub_self->setType(sub.type());
      std::unordered_map<const Value*, Value*> sub_env;
      for (const Value* input : group_inputs) {
        Value* parameter = body->addInput();
        parameter->setType(input->type());
        sub_env[input] = parameter;
      }
      fill(*body, sub_self, sub, child_path, group, sub_env, group_outputs);
      addMethod(sub, method, body);

      std::vector<Value*> arguments = {graph.insertGetAttr(self, child)};
      for (const Value* input : group_inputs) arguments.push_back(lookup(input));
      Node* call = graph.insertNode(graph.create(prim::CallMethod, arguments, 1));
      call->s_(torch::jit::attr::name, method);
      call->output()->setType(body->outputs()[0]->type());
      if (group_outputs.size() == 1) {
        env[group_outputs[0]] = call->output();
      } else if (group_outputs.size() > 1) {
        Node* unpack = graph.insertNode(graph.createTupleUnpack(call->output()));
        for (size_t o = 0; o < group_outputs.size(); ++o) env[group_outputs[o]] = unpack->output(o);
      }
      i = j;
    }
    std::vector<Value*> results;
    results.reserve(outputs.size());
    for (const Value* output : outputs) results.push_back(lookup(output));
    if (results.empty()) {
      graph.registerOutput(graph.insertConstant(c10::IValue()));
    } else if (results.size() == 1) {
      graph.registerOutput(results[0]);
    } else {
      graph.registerOutput(graph.insertNode(graph.createTuple(results))->output());
    }
  }

  const LoadedModel& model_;
  bool keep_paths_;
  std::unordered_map<const Value*, c10::IValue> constants_;
  std::shared_ptr<torch::jit::CompilationUnit> unit_ =
      std::make_shared<torch::jit::CompilationUnit>();
  size_t modules_ = 0;
  std::map<std::string, int> calls_;
};

}  // namespace

ReproModule outlineRegion(const Region& region, const std::vector<const Value*>& boundary,
                          const std::vector<c10::IValue>& consumed, const LoadedModel& model,
                          bool keep_paths) {
  // Weights and scalars become constants where they are read; activations become inputs.
  std::unordered_map<const Value*, c10::IValue> constants;
  std::vector<const Value*> inputs;
  std::vector<c10::IValue> values;
  for (size_t i = 0; i < boundary.size(); ++i) {
    const Node* producer = boundary[i]->node();
    const bool weight = producer->kind() == prim::GetAttr || producer->kind() == prim::Constant;
    if (!weight && (consumed[i].isTensor() || consumed[i].isTensorList())) {
      inputs.push_back(boundary[i]);
      values.push_back(consumed[i]);
    } else {
      constants[boundary[i]] = consumed[i];
    }
  }
  Outliner outliner(model, keep_paths, std::move(constants));
  // What the rest of the model reads from the region; at least the last node's result.
  std::vector<const Value*> outputs = readOutside(region.nodes, nodesWithin(region));
  if (outputs.empty()) outputs.push_back(region.nodes.back()->output(0));
  return outliner.build(region.nodes, inputs, values, outputs);
}

}  // namespace stickler
