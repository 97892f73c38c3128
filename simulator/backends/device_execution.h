#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

#include "simulator/lowering/lowering.h"
#include "simulator/numerics/number_format.h"
#include "simulator/workers/worker_progress.h"

namespace stickler {

// How one device node handles values, decided once per plan.
struct DeviceNodePlan {
  int64_t index = -1;                  // position in allNodes(), for progress reports
  std::vector<size_t> enter_inputs;    // inputs arriving from the host: converted on entry
  std::vector<size_t> leave_outputs;   // outputs leaving the node's kernel: rounded
  bool round_bias_separately = false;  // linear/addmm decomposed into matmul, then + bias
  std::vector<const FaultRule*> faults;
};

// The numerics of a lowered graph: which nodes run on the device, where values are rounded
// to the device's format, and the faults bound to nodes.
class DevicePlan {
 public:
  DevicePlan(const LoadedModel& model, const LoweringResult& lowering, const DeviceProfile& profile,
             NumberFormat format, bool narrow_integers);
  ~DevicePlan();
  DevicePlan(const DevicePlan&) = delete;
  DevicePlan& operator=(const DevicePlan&) = delete;

  const DeviceNodePlan* find(const torch::jit::Node* node) const;
  NumberFormat format() const { return format_; }
  bool narrowIntegers() const { return narrow_integers_; }
  int64_t stickElements() const { return stick_elements_; }
  // A weight or constant in device format, converted once and kept.
  c10::IValue deviceWeight(const c10::IValue& value) const;
  c10::IValue toDevice(const c10::IValue& value) const;

 private:
  std::unordered_map<const torch::jit::Node*, DeviceNodePlan> nodes_;
  NumberFormat format_;
  bool narrow_integers_;
  int64_t stick_elements_;
  mutable std::unordered_map<const c10::TensorImpl*, at::Tensor> weights_;
  // Device weights read through rounding (rounded_when_widened.h), unregistered with the plan.
  mutable std::vector<at::Tensor> rounded_when_widened_;
};

// The observer that makes the CPU interpreter behave like the device: values cross into the
// device format as they enter device kernels and where they leave them, faults strike their
// nodes, progress is recorded for abort reports. Calls `inner` (if any) after its own work.
class DeviceExecution : public ExecutionObserver {
 public:
  DeviceExecution(const DevicePlan& plan, ExecutionObserver* inner, WorkerProgress* progress,
                  bool may_abort);

  void onModuleEnter(const ModuleCall& call, const ValueView& inputs) override;
  void beforeNode(const torch::jit::Node& node, const ModuleCall* module,
                  const NodeInputs& inputs) override;
  void onNode(const torch::jit::Node& node, const ModuleCall* module, const ValueView& inputs,
              const MutableValueView& outputs) override;
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override;
  bool seesShapeArithmetic() const override { return inner_ && inner_->seesShapeArithmetic(); }

  // Module calls are numbered by the interpreter; progress reports their index.
  void setModuleCalls(const std::vector<ModuleCall>* calls) { calls_ = calls; }

 private:
  int64_t callIndex(const ModuleCall* call) const;

  const DevicePlan& plan_;
  ExecutionObserver* inner_;
  WorkerProgress* progress_;
  bool may_abort_;
  const std::vector<ModuleCall>* calls_ = nullptr;
  std::vector<c10::IValue> kernel_inputs_;  // as the current node saw them
  // beforeNode's lookup, reused by onNode for the same node.
  const torch::jit::Node* current_node_ = nullptr;
  const DeviceNodePlan* current_plan_ = nullptr;
  bool reads_rounded_weight_ = false;  // the current node reads a weight read through rounding
};

}  // namespace stickler
