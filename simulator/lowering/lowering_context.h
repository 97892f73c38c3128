#pragma once

// What the lowering rules share: the model, the profile, and questions about nodes and values.
// Internal to simulator/lowering.

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "simulator/lowering/lowering.h"
#include "simulator/lowering/op_classes.h"

namespace stickler {

class LoweringContext {
 public:
  LoweringContext(const LoadedModel& model, const DeviceProfile& profile,
                  const Placement& placement, const LoweringOptions& options);

  const LoadedModel& model;
  const DeviceProfile& profile;
  const Placement& placement;
  const LoweringOptions& options;

  int64_t stick() const { return profile.stickElements(); }
  std::string opName(const torch::jit::Node& node) const { return node.kind().toQualString(); }
  const NodeRecord* record(const torch::jit::Node& node) const;
  const ValueDesc* inputDesc(const torch::jit::Node& node, size_t index) const;
  const ValueDesc* outputDesc(const torch::jit::Node& node, size_t index) const;

  // A tensor the model computes (not shape arithmetic, not a scalar).
  bool isDataTensor(const torch::jit::Value* value) const;
  // Read from a module attribute (a parameter or buffer) or a graph constant.
  bool isWeight(const torch::jit::Value* value) const;
  // The module attribute path of a weight (e.g. "lm_head.weight"), or "".
  std::string weightName(const torch::jit::Value* value) const;
  // An int the node consumed: a constant, or the value recorded in the example run.
  std::optional<int64_t> intInput(const torch::jit::Node& node, size_t index) const;
  std::optional<std::vector<int64_t>> intListInput(const torch::jit::Node& node,
                                                   size_t index) const;
  // The aten nodes that read `value`, looking through lists, tuples and unpacking; `returned`
  // is set when the value leaves through a block or graph return.
  std::vector<const torch::jit::Node*> consumers(const torch::jit::Value* value,
                                                 bool* returned = nullptr) const;

 private:
  std::unordered_set<const torch::jit::Value*> shape_values_;
};

// The matrix operand of a matmul-like node (linear's weight, the B of addmm, mm or matmul when
// it is two-dimensional), whether a module weight, a folded constant or a computed value, with
// its sizes as [out, in].
struct WeightOperand {
  const torch::jit::Value* value = nullptr;
  int64_t out_features = 0;
  int64_t in_features = 0;
};
std::optional<WeightOperand> weightOperand(const LoweringContext& context,
                                           const torch::jit::Node& node);

// The stick dimension of a tensor: its innermost dimension in memory among those of size > 1.
std::optional<int64_t> stickDimOf(const ValueDesc& desc);
// Whether two operands of one pointwise operator are sticked on different dimensions, counted
// from the right as broadcasting aligns them, with neither broadcast along the other's: what
// the compiler cannot combine (rule stick-mismatch) and transform restickify copies apart.
bool sticksMismatch(const ValueDesc& x, const ValueDesc& y);
int64_t normalizeDim(int64_t dim, int64_t rank);

// The rules, each adding what it finds for one device-placed node (lowering_rules/*.cpp).
void checkZeroLength(const LoweringContext& context, const torch::jit::Node& node,
                     std::vector<Blocker>& blockers);
void checkWeightStickAlignment(const LoweringContext& context, const torch::jit::Node& node,
                               std::vector<Blocker>& blockers);
void checkStickOffsets(const LoweringContext& context, const torch::jit::Node& node,
                       std::vector<Blocker>& blockers);
void checkStickDimConstraints(const LoweringContext& context, const torch::jit::Node& node,
                              std::vector<Blocker>& blockers);
void checkPointwiseSticks(const LoweringContext& context, const torch::jit::Node& node,
                          std::vector<Blocker>& blockers);
void checkCoreSpan(const LoweringContext& context, const torch::jit::Node& node,
                   std::vector<Blocker>& blockers);
void checkScratchpad(const LoweringContext& context, const torch::jit::Node& node,
                     std::vector<Blocker>& blockers);

// Kernels: one per device node, or fused chains under FusionPolicy::kPointwise.
void formKernels(const LoweringContext& context, LoweringResult& result);
// Faults bound to device nodes; a compile_error fault ends the compile.
void bindFaults(const LoweringContext& context, LoweringResult& result);
// Transfers between device and host around cpu-fallback operators.
void countTransfers(const LoweringContext& context, LoweringResult& result);

}  // namespace stickler
