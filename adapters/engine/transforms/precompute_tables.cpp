// precompute_tables: a module whose outputs depend only on weights and the inputs' shapes
// (RoPE's cos/sin tables: frequencies times positions 0..n-1) is computed once on the host and
// its outputs become constants, so sin and cos leave the device graph. Like the device, the
// adapted model is then specialized to the example inputs' shapes. Each table also keeps its
// float64 twin, computed by the module in float64, so that the adapted model run in float64
// (the equivalence check's truth) reads the tables the original computes there.
#include <map>
#include <set>
#include <unordered_map>

#include "adapters/engine/equivalence/region_program.h"
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/static_values.h"
#include "simulator/backends/float64_graph.h"
#include "simulator/diagnose/repro_region.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

// What the matching module calls read and hand back, as they were on the example inputs (the
// first call of each, as records keep). The run stops once every matching module has returned:
// the rest of the model (the last layers, the vocabulary projection) has nothing to add.
class ModuleCalls : public ExecutionObserver {
 public:
  struct AllSeen {};

  ModuleCalls(std::string pattern, const std::vector<ModuleCall>& calls)
      : pattern_(std::move(pattern)) {
    std::set<std::string> matching;
    for (const ModuleCall& call : calls) {
      if (globMatch(pattern_, call.path)) matching.insert(call.path);
    }
    expected_ = matching.size();
  }

  void onModuleEnter(const ModuleCall& call, const ValueView& inputs) override {
    if (!globMatch(pattern_, call.path) || seen_.count(call.path)) return;
    Seen& seen = seen_[call.path];
    seen.call = &call;
    for (size_t i = 0; i < inputs.size(); ++i) seen.inputs.push_back(inputs[i]);
  }

  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override {
    auto found = seen_.find(call.path);
    if (found == seen_.end() || found->second.call != &call || !found->second.outputs.empty()) {
      return;
    }
    for (size_t i = 0; i < outputs.size(); ++i) found->second.outputs.push_back(outputs[i]);
    if (++returned_ == expected_) throw AllSeen{};
  }

  struct Seen {
    const ModuleCall* call = nullptr;
    std::vector<c10::IValue> inputs;
    std::vector<c10::IValue> outputs;
  };
  const std::map<std::string, Seen>& calls() const { return seen_; }

 private:
  std::string pattern_;
  std::map<std::string, Seen> seen_;
  size_t expected_ = 0;
  size_t returned_ = 0;
};

// The call's outputs computed in float64 from the same inputs.
std::vector<c10::IValue> inFloat64(const LoadedModel& model, const ModuleCalls::Seen& seen) {
  try {
    const RegionProgram program(model, moduleRegion(model, seen.call->path).nodes,
                                seen.call->inputs, seen.call->outputs, Precision::kFloat64);
    return program.run(seen.inputs);
  } catch (const UserError& e) {
    throw UserError("cannot compute the float64 tables of " + seen.call->path + ": " + e.what());
  }
}

// Replaces the copy of `original` by `value` (with its float64 twin) when it depends on shapes
// only.
void replaceByConstant(GraphEdit& edit, StaticValues& statics, const Value* original,
                       const c10::IValue& value, const c10::IValue& twin) {
  if (!value.isTensor() || !statics.isStatic(original)) return;
  Value* copy = edit.copyOf(original);
  if (copy == nullptr) return;
  torch::jit::Graph& graph = edit.graph();
  Node* producer = copy->node();
  {
    torch::jit::WithInsertPoint insert_point(producer->next());
    torch::jit::WithCurrentScope scope(graph, producer->scope());
    Value* constant = graph.insertConstant(value.toTensor().detach().clone());
    constant->node()->setSourceRange(producer->sourceRange());
    if (twin.isTensor() && twin.toTensor().is_floating_point() &&
        value.toTensor().scalar_type() == c10::kFloat) {
      attachFloat64Twin(*constant->node(), twin.toTensor());
    }
    copy->replaceAllUsesWith(constant);
  }
  edit.destroyIfUnused(producer);
  ++edit.change().rewrites;
  edit.change().fixes_shapes = true;
}

}  // namespace

void precomputeTables(const nlohmann::json& arguments, GraphEdit& edit,
                      const DeviceProfile& profile) {
  const LoadedModel& model = edit.model();
  ModuleCalls calls(arguments.at("module"), model.interpreter->moduleCalls());
  try {
    model.interpreter->run(model.example_inputs, &calls);
  } catch (const ModuleCalls::AllSeen&) {
  }
  StaticValues statics(*model.graph);
  for (const auto& [path, seen] : calls.calls()) {
    bool any_static = false;
    for (const Value* output : seen.call->outputs) {
      any_static = any_static || statics.isStatic(output);
      if (output->node()->kind() == prim::TupleConstruct) {
        for (const Value* element : output->node()->inputs()) {
          any_static = any_static || statics.isStatic(element);
        }
      }
    }
    if (!any_static || seen.outputs.size() != seen.call->outputs.size()) continue;
    const std::vector<c10::IValue> twins = inFloat64(model, seen);
    for (size_t o = 0; o < seen.outputs.size(); ++o) {
      const Value* original = seen.call->outputs[o];
      const c10::IValue& value = seen.outputs[o];
      // A module returning (cos, sin) hands back the tuple: its elements are the tables.
      if (value.isTuple() && original->node()->kind() == prim::TupleConstruct) {
        const auto& elements = value.toTupleRef().elements();
        const auto& twin_elements = twins.at(o).toTupleRef().elements();
        for (size_t i = 0; i < elements.size(); ++i) {
          replaceByConstant(edit, statics, original->node()->input(i), elements[i],
                            twin_elements.at(i));
        }
      } else {
        replaceByConstant(edit, statics, original, value, twins.at(o));
      }
    }
  }
}

}  // namespace stickler
