// precompute_tables: a module whose outputs depend only on weights and the inputs' shapes
// (RoPE's cos/sin tables: frequencies times positions 0..n-1) is computed once on the host and
// its outputs become constants, so sin and cos leave the device graph. Like the device, the
// adapted model is then specialized to the example inputs' shapes.
#include <unordered_map>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/static_values.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

// The values the matching module calls hand back, as they were on the example inputs.
class ModuleOutputs : public ExecutionObserver {
 public:
  explicit ModuleOutputs(std::string pattern) : pattern_(std::move(pattern)) {}

  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override {
    if (!globMatch(pattern_, call.path)) return;
    for (size_t i = 0; i < call.outputs.size() && i < outputs.size(); ++i) {
      values_.emplace(call.outputs[i], outputs[i]);  // the first call's, as records keep
    }
  }

  const std::unordered_map<const Value*, c10::IValue>& values() const { return values_; }

 private:
  std::string pattern_;
  std::unordered_map<const Value*, c10::IValue> values_;
};

// Replaces the copy of `original` by `value` when it depends on shapes only.
void replaceByConstant(GraphEdit& edit, StaticValues& statics, const Value* original,
                       const c10::IValue& value) {
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
  ModuleOutputs outputs(arguments.at("module"));
  model.interpreter->run(model.example_inputs, &outputs);
  StaticValues statics(*model.graph);
  for (const auto& [original, value] : outputs.values()) {
    // A module returning (cos, sin) hands back the tuple: its elements are the tables.
    if (value.isTuple() && original->node()->kind() == prim::TupleConstruct) {
      const auto& elements = value.toTupleRef().elements();
      for (size_t i = 0; i < elements.size(); ++i) {
        replaceByConstant(edit, statics, original->node()->input(i), elements[i]);
      }
    } else {
      replaceByConstant(edit, statics, original, value);
    }
  }
}

}  // namespace stickler
