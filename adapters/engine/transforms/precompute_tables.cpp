// precompute_tables: a module whose outputs depend only on weights and the inputs' shapes
// (RoPE's cos/sin tables: frequencies times positions 0..n-1) is computed once on the host and
// its outputs become constants, so sin and cos leave the device graph. The tables are computed
// from the nodes that build them alone, not by running the model: a static value reads nothing
// of a tensor but its sizes and dtype, so tensors of the recorded shapes stand in for the
// activations. Like the device, the adapted model is then specialized to the example inputs'
// shapes. Each table also keeps its float64 twin, computed by the same nodes in float64, so that
// the adapted model run in float64 (the equivalence check's truth) reads the tables the original
// computes there.
#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "adapters/engine/equivalence/region_program.h"
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/static_values.h"
#include "simulator/backends/float64_graph.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/model_card.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

bool readsMetadataOnly(const Node* node) {
  return node->kind() == torch::jit::aten::size || node->kind() == prim::dtype ||
         node->kind() == prim::device || node->kind() == torch::jit::aten::dim;
}

// The nodes that build some static values, and the tensors whose metadata they read, with
// stand-ins of the recorded shape and dtype.
struct TableSlice {
  std::set<const Node*> nodes;
  std::vector<const Value*> read;
  std::vector<c10::IValue> stand_ins;

  // Adds what `table` is built from; false (and nothing added) when a node it needs sits in a
  // nested block (a module called under control flow) or a stand-in's shape was not recorded.
  bool add(const LoadedModel& model, const Value* table) {
    TableSlice more = *this;
    std::vector<const Value*> pending = {table};
    while (!pending.empty()) {
      const Value* value = pending.back();
      pending.pop_back();
      const Node* node = value->node();
      if (value == model.graph->inputs().at(0) || node->kind() == prim::Constant ||
          node->kind() == prim::GetAttr || more.nodes.count(node)) {
        continue;  // the region program reads constants and weights itself
      }
      if (node->owningBlock() != model.graph->block() || node->kind() == prim::Param) return false;
      more.nodes.insert(node);
      size_t first_input = 0;
      if (readsMetadataOnly(node) && node->input(0)->node()->kind() != prim::Constant) {
        first_input = 1;
        if (!more.standIn(model, node)) return false;
      }
      for (size_t i = first_input; i < node->inputs().size(); ++i) {
        pending.push_back(node->input(i));
      }
    }
    *this = std::move(more);
    return true;
  }

 private:
  bool standIn(const LoadedModel& model, const Node* metadata) {
    const Value* tensor = metadata->input(0);
    if (std::find(read.begin(), read.end(), tensor) != read.end()) return true;
    const auto record = model.records.find(metadata);
    if (record == model.records.end() || record->second.inputs.empty()) return false;
    const ValueDesc& desc = record->second.inputs[0];
    const std::optional<DType> dtype = dtypeFromName(desc.dtype);
    if (desc.kind != "Tensor" || !dtype) return false;
    read.push_back(tensor);
    stand_ins.emplace_back(at::zeros(desc.shape, at::TensorOptions().dtype(toScalarType(*dtype))));
    return true;
  }
};

// Replaces the copy of `original`, which depends on shapes only, by `value` (with its float64
// twin).
void replaceByConstant(GraphEdit& edit, const Value* original, const c10::IValue& value,
                       const c10::IValue& twin) {
  if (!value.isTensor()) return;
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
        widensToFloat64(value.toTensor().scalar_type())) {
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
  const std::string pattern = arguments.at("module");
  // The tables: what the first call of each matching module returns (the elements of a
  // returned tuple) that depends on shapes only.
  StaticValues statics(*model.graph);
  std::set<std::string> paths;
  std::vector<const Value*> tables;
  TableSlice slice;
  const auto consider = [&](const Value* value) {
    if (statics.isStatic(value) && slice.add(model, value)) tables.push_back(value);
  };
  for (const ModuleCall& call : model.interpreter->moduleCalls()) {
    if (!globMatch(pattern, call.path) || !paths.insert(call.path).second) continue;
    for (const Value* output : call.outputs) {
      if (output->node()->kind() == prim::TupleConstruct) {
        for (const Value* element : output->node()->inputs()) consider(element);
      } else {
        consider(output);
      }
    }
  }
  if (tables.empty()) return;
  std::vector<const Node*> nodes;
  for (const Node* node : model.graph->nodes()) {
    if (slice.nodes.count(node)) nodes.push_back(node);
  }
  std::vector<c10::IValue> values;
  std::vector<c10::IValue> twins;
  try {
    values =
        RegionProgram(model, nodes, slice.read, tables, Precision::kFloat32).run(slice.stand_ins);
    twins =
        RegionProgram(model, nodes, slice.read, tables, Precision::kFloat64).run(slice.stand_ins);
  } catch (const UserError& e) {
    throw UserError(std::string("cannot compute the tables: ") + e.what());
  }
  for (size_t i = 0; i < tables.size(); ++i)
    replaceByConstant(edit, tables[i], values[i], twins[i]);
}

}  // namespace stickler
