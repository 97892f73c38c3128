#include "simulator/backends/device_execution.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "simulator/backends/fault_effects.h"
#include "simulator/graph/mapped_archive.h"
#include "simulator/interpreter/rounded_when_widened.h"
#include "simulator/interpreter/sixteen_bit.h"
#include "simulator/lowering/op_classes.h"
#include "simulator/numerics/tensor_rounding.h"

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

namespace {

bool holdsTensors(const Value* value) {
  const auto& type = value->type();
  if (type->kind() == c10::TypeKind::TensorType) return true;
  return type->kind() == c10::TypeKind::ListType &&
         type->containedTypes().at(0)->kind() == c10::TypeKind::TensorType;
}

bool isWeight(const Value* value) {
  return value->node()->kind() == prim::GetAttr || value->node()->kind() == prim::Constant;
}

// Whether a value is already in device format: computed by a device kernel (directly, or
// gathered into a list or unpacked from one).
bool computedOnDevice(const Value* value, const LoweringResult& lowering) {
  const Node* producer = value->node();
  const auto kind = producer->kind();
  if (kind == prim::ListConstruct || kind == prim::TupleConstruct) {
    for (const Value* input : producer->inputs()) {
      if (holdsTensors(input) && !computedOnDevice(input, lowering)) return false;
    }
    return true;
  }
  if (kind == prim::ListUnpack || kind == prim::TupleUnpack) {
    return computedOnDevice(producer->input(), lowering);
  }
  return kind.is_aten() && lowering.placeOf(producer) == NodePlace::kDevice;
}

}  // namespace

DevicePlan::DevicePlan(const LoadedModel& model, const LoweringResult& lowering,
                       const DeviceProfile& profile, NumberFormat format, bool narrow_integers)
    : format_(format), narrow_integers_(narrow_integers), stick_elements_(profile.stickElements()) {
  int64_t index = 0;
  for (const Node* node : allNodes(*model.graph)) {
    const int64_t position = index++;
    if (lowering.placeOf(node) != NodePlace::kDevice) continue;
    DeviceNodePlan plan;
    plan.index = position;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Value* input = node->input(i);
      if (holdsTensors(input) && !computedOnDevice(input, lowering)) plan.enter_inputs.push_back(i);
    }
    const std::string op = node->kind().toQualString();
    const int kernel = lowering.kernel_of.at(node);
    if (opClassOf(op) != OpClass::kView) {
      for (size_t j = 0; j < node->outputs().size(); ++j) {
        const Value* output = node->output(j);
        if (!holdsTensors(output)) continue;
        bool leaves = false;
        for (const Node* reader : atenConsumers(output, &leaves)) {
          auto it = lowering.kernel_of.find(reader);
          leaves = leaves || it == lowering.kernel_of.end() || it->second != kernel;
        }
        if (leaves) plan.leave_outputs.push_back(j);
      }
    }
    const bool with_bias =
        (op == "aten::linear" && node->inputs().size() > 2 && !node->input(2)->mustBeNone()) ||
        op == "aten::addmm";
    plan.round_bias_separately = with_bias &&
                                 profile.entryFor(op).support == OpSupport::kDecomposed &&
                                 lowering.kernels[kernel].size() == 1;
    for (const FaultSite& site : lowering.faults) {
      if (site.node == node) plan.faults.push_back(site.rule);
    }
    nodes_.emplace(node, std::move(plan));
  }
}

DevicePlan::~DevicePlan() {
  for (const at::Tensor& weight : rounded_when_widened_) stopRoundingWhenWidened(weight);
}

const DeviceNodePlan* DevicePlan::find(const Node* node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second;
}

c10::IValue DevicePlan::toDevice(const c10::IValue& value) const {
  if (value.isTensor() && !value.toTensor().is_floating_point() && !narrow_integers_) return value;
  return toDeviceValue(value, format_);
}

c10::IValue DevicePlan::deviceWeight(const c10::IValue& value) const {
  if (!value.isTensor()) return toDevice(value);
  const at::Tensor& tensor = value.toTensor();
  auto it = weights_.find(tensor.unsafeGetTensorImpl());
  if (it == weights_.end()) {
    // A 16-bit weight the device's format holds exactly (a bfloat16 weight on DL16, which has
    // more mantissa, almost always) is no copy at all. One it rounds to values of its own dtype
    // (a float16 weight on DL16: about half its values) is a copy on write of the archive's
    // pages with those values rounded. One whose rounded values its dtype cannot hold (a
    // bfloat16 value below DL16's smallest) is read through the rounding, from a second mapping
    // of the archive's pages (rounded_when_widened.h). The interpreter widens them as it reads.
    at::Tensor device;
    if (isSixteenBitFloat(tensor.scalar_type())) {
      if (holdsExactly(tensor, format_)) {
        device = tensor;
      } else {
        at::Tensor copy = copyOnWrite(tensor);
        if (roundSixteenBitWhereChanged(copy, format_)) {
          device = std::move(copy);
        } else {
          device = copyOnWrite(tensor);
          roundWhenWidened(device, format_);
          rounded_when_widened_.push_back(device);
        }
      }
    }
    if (!device.defined()) device = toDevice(tensor).toTensor();
    it = weights_.emplace(tensor.unsafeGetTensorImpl(), std::move(device)).first;
  }
  return it->second;
}

DeviceExecution::DeviceExecution(const DevicePlan& plan, ExecutionObserver* inner,
                                 WorkerProgress* progress, bool may_abort)
    : plan_(plan), inner_(inner), progress_(progress), may_abort_(may_abort) {}

int64_t DeviceExecution::callIndex(const ModuleCall* call) const {
  if (call == nullptr || calls_ == nullptr || calls_->empty()) return -1;
  return call - calls_->data();
}

void DeviceExecution::onModuleEnter(const ModuleCall& call, const ValueView& inputs) {
  if (progress_) progress_->last_entered = callIndex(&call);
  if (inner_) inner_->onModuleEnter(call, inputs);
}

void DeviceExecution::onModuleExit(const ModuleCall& call, const MutableValueView& outputs) {
  if (inner_) inner_->onModuleExit(call, outputs);
}

void DeviceExecution::beforeNode(const Node& node, const ModuleCall* module,
                                 const NodeInputs& inputs) {
  current_node_ = &node;
  current_plan_ = plan_.find(&node);
  if (const DeviceNodePlan* plan = current_plan_) {
    if (progress_) {
      progress_->node = plan->index;
      progress_->module_call = callIndex(module);
      ++progress_->nodes_run;
    }
    reads_rounded_weight_ = false;
    for (size_t i : plan->enter_inputs) {
      if (!isWeight(node.input(i))) {
        inputs.replace(i, plan_.toDevice(inputs[i]));
        continue;
      }
      c10::IValue weight = plan_.deviceWeight(inputs[i]);
      reads_rounded_weight_ =
          reads_rounded_weight_ || (weight.isTensor() && isRoundedWhenWidened(weight.toTensor()));
      inputs.replace(i, std::move(weight));
    }
    kernel_inputs_.clear();
    for (const FaultRule* fault : plan->faults) {
      if (fault->effect.kind == FaultEffect::Kind::kRuntimeAbort) {
        if (!may_abort_) {
          throw std::runtime_error("device runtime abort outside a worker: " +
                                   fault->effect.message);
        }
        // write(2), not stdio: the process ends now, and stdio buffers would be lost.
        const std::string line = fault->effect.message + "\n";
        [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
        std::abort();
      }
      if (fault->effect.kind == FaultEffect::Kind::kAccumulateNarrow && kernel_inputs_.empty()) {
        for (size_t i = 0; i < inputs.size(); ++i) {
          kernel_inputs_.push_back(widenSixteenBit(inputs[i]));
        }
      }
    }
  }
  if (inner_) inner_->beforeNode(node, module, inputs);
}

void DeviceExecution::onNode(const Node& node, const ModuleCall* module, const ValueView& inputs,
                             const MutableValueView& outputs) {
  const DeviceNodePlan* found = &node == current_node_ ? current_plan_ : plan_.find(&node);
  if (const DeviceNodePlan* plan = found) {
    if (reads_rounded_weight_) {
      // An operator that moves a weight read through rounding into a tensor of its own (an
      // embedding's gather) copies its unrounded 16-bit values: round them here, to float32
      // as they would be widened. A view of the weight is rounded where it is read.
      for (size_t j = 0; j < outputs.size(); ++j) {
        if (!outputs[j].isTensor()) continue;
        const at::Tensor& tensor = outputs[j].toTensor();
        if (tensor.defined() && isSixteenBitFloat(tensor.scalar_type()) &&
            !isRoundedWhenWidened(tensor)) {
          outputs.replace(j, roundToFormat(tensor, plan_.format()));
        }
      }
    }
    if (plan->round_bias_separately && outputs[0].isTensor()) {
      // Two kernels: the matmul's result is stored in device format before the bias is added.
      const size_t bias_index = node.kind() == torch::jit::aten::addmm ? 0 : 2;
      const at::Tensor bias = plan_.deviceWeight(inputs[bias_index]).toTensor();
      const at::Tensor product = roundToFormat(outputs[0].toTensor() - bias, plan_.format());
      outputs.replace(0, product + bias);
    }
    for (const FaultRule* fault : plan->faults) {
      if (fault->effect.kind == FaultEffect::Kind::kRuntimeAbort || !outputs[0].isTensor())
        continue;
      outputs.replace(0, applyFault(fault->effect, node, kernel_inputs_, outputs[0].toTensor(),
                                    plan_.stickElements()));
    }
    for (size_t j : plan->leave_outputs) {
      const c10::IValue& value = outputs[j];
      if (value.isTensor()) {
        const at::Tensor& tensor = value.toTensor();
        if (roundUnsharedInPlace(tensor, plan_.format())) continue;
        bool in_place = false;
        for (size_t i = 0; i < inputs.size() && !in_place; ++i) {
          in_place = inputs[i].isTensor() && inputs[i].toTensor().is_same(tensor);
        }
        if (in_place) {
          // An in-place op: others hold this tensor, so round it where it is.
          tensor.copy_(plan_.toDevice(value).toTensor());
          continue;
        }
      }
      outputs.replace(j, plan_.toDevice(value));
    }
  }
  if (inner_) inner_->onNode(node, module, inputs, outputs);
}

}  // namespace stickler
