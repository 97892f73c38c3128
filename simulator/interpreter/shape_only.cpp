#include "simulator/interpreter/shape_only.h"

#include <algorithm>

#include <torch/csrc/jit/ir/ir.h>

namespace stickler {
namespace {

bool allStridesZero(const at::Tensor& tensor) {
  const auto strides = tensor.strides();
  return std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 0; });
}

bool shapeOnly(const at::Tensor& tensor) {
  return tensor.defined() &&
         (tensor.is_meta() || (tensor.numel() > 1 && tensor.dim() > 0 && allStridesZero(tensor)));
}

at::Tensor onMeta(const at::Tensor& tensor) {
  if (!tensor.defined() || tensor.is_meta()) return tensor;
  return at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(at::kMeta));
}

at::Tensor onCpu(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_meta()) return tensor;
  return at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(at::kCPU))
      .zero_();
}

template <typename Convert>
c10::IValue convert(const c10::IValue& value, Convert to) {
  if (value.isTensor()) return to(value.toTensor());
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) list.push_back(to(tensor));
    return list;
  }
  return value;
}

}  // namespace

bool isStoragelessWeight(const at::Tensor& tensor) {
  return tensor.defined() && tensor.numel() >= kStoragelessElements && allStridesZero(tensor);
}

bool computesOnTensors(const torch::jit::Node& node) {
  if (!node.kind().is_aten()) return false;
  const c10::FunctionSchema* schema = node.maybeSchema();
  if (schema == nullptr) return false;
  for (const c10::Argument& argument : schema->arguments()) {
    c10::TypePtr type = argument.type();
    if (type->kind() == c10::TypeKind::OptionalType) type = type->containedType(0);
    if (type->kind() == c10::TypeKind::ListType) type = type->containedType(0);
    if (type->kind() == c10::TypeKind::TensorType) return true;
  }
  return false;
}

bool readsShapesOnly(const std::vector<c10::IValue>& stack) {
  for (const c10::IValue& value : stack) {
    if (value.isTensor() && shapeOnly(value.toTensor())) return true;
    if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        if (shapeOnly(tensor)) return true;
      }
    }
  }
  return false;
}

void runOnShapes(torch::jit::Operation& operation, std::vector<c10::IValue>& stack) {
  std::vector<c10::IValue> on_meta;
  on_meta.reserve(stack.size());
  for (const c10::IValue& value : stack) on_meta.push_back(convert(value, onMeta));
  try {
    operation(on_meta);
    stack = std::move(on_meta);
    return;
  } catch (const c10::Error&) {
    // No meta kernel (or one that reads values, as item() does): the CPU's, on zeros.
  }
  for (c10::IValue& value : stack) value = convert(value, onCpu);
  operation(stack);
}

}  // namespace stickler
