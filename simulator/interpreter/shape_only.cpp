#include "simulator/interpreter/shape_only.h"

#include <algorithm>
#include <unordered_map>

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

// Ones of `tensor`'s shape on the CPU: one element expanded to the shape (no memory, however
// large the weight), or, when `dense`, every element written (for an operator that writes into
// its input or needs its elements apart).
at::Tensor onCpu(const at::Tensor& tensor, bool dense) {
  if (!tensor.defined() || !tensor.is_meta()) return tensor;
  const auto options = tensor.options().device(at::kCPU);
  if (!dense) return at::ones({}, options).expand(tensor.sizes());
  return at::empty_strided(tensor.sizes(), tensor.strides(), options).fill_(1);
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
  return tensor.defined() &&
         (tensor.is_meta() || (tensor.numel() >= kStoragelessElements && allStridesZero(tensor)));
}

namespace {

// What a shapes-only run leaves unread: floating-point tensors of more than one element.
// Integer and boolean buffers (positions, masks) and scalars stay real, as values computed from
// the inputs alone do.
bool isWeight(const at::Tensor& tensor) {
  return tensor.defined() && (tensor.is_floating_point() || tensor.is_complex()) &&
         tensor.numel() > 1;
}

c10::IValue weightsOnMeta(const c10::IValue& value,
                          std::unordered_map<const void*, c10::IValue>& copied) {
  if (value.isObject()) {
    const auto object = value.toObject();
    // Shared submodules (tied weights' owners) stay shared.
    if (auto done = copied.find(object.get()); done != copied.end()) return done->second;
    auto copy = c10::ivalue::Object::create(
        c10::StrongTypePtr(object->compilation_unit(), object->type()), object->slots().size());
    copied.emplace(object.get(), c10::IValue(copy));
    for (size_t i = 0; i < object->slots().size(); ++i) {
      copy->setSlot(i, weightsOnMeta(object->getSlot(i), copied));
    }
    return copy;
  }
  return convert(
      value, [](const at::Tensor& tensor) { return isWeight(tensor) ? onMeta(tensor) : tensor; });
}

}  // namespace

torch::jit::Module withWeightsOnMeta(const torch::jit::Module& module) {
  std::unordered_map<const void*, c10::IValue> copied;
  return torch::jit::Module(weightsOnMeta(c10::IValue(module._ivalue()), copied).toObject());
}

c10::IValue floatsOnMeta(const c10::IValue& value) {
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const c10::IValue& element : value.toTupleRef().elements()) {
      elements.push_back(floatsOnMeta(element));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (value.isList()) {
    c10::impl::GenericList list(value.toList().elementType());
    for (const c10::IValue& element : value.toList()) list.push_back(floatsOnMeta(element));
    return list;
  }
  if (value.isGenericDict()) {
    const c10::Dict<c10::IValue, c10::IValue> dict = value.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) copy.insert(entry.key(), floatsOnMeta(entry.value()));
    return copy;
  }
  return convert(value, [](const at::Tensor& tensor) {
    return tensor.defined() && (tensor.is_floating_point() || tensor.is_complex()) ? onMeta(tensor)
                                                                                   : tensor;
  });
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
  for (const c10::IValue& value : stack) {
    // A move to the CPU (Transformers' `.to(x.device)`, traced with the CPU as a constant) keeps
    // a value of shapes where its shapes are: on the meta device, whose copy out would fail.
    if (value.isDevice() && value.toDevice().is_cpu()) {
      on_meta.emplace_back(c10::Device(at::kMeta));
      continue;
    }
    on_meta.push_back(convert(value, onMeta));
  }
  try {
    operation(on_meta);
    stack = std::move(on_meta);
    return;
  } catch (const c10::Error&) {
    // No meta kernel (index_select has none in LibTorch, nor has anything that reads values,
    // as item() does): the CPU's, on ones.
  }
  const std::vector<c10::IValue> inputs = stack;
  for (c10::IValue& value : stack) {
    value = convert(value, [](const at::Tensor& tensor) { return onCpu(tensor, false); });
  }
  try {
    operation(stack);
    return;
  } catch (const c10::Error&) {
    // An operator that writes into its input or needs its elements apart.
  }
  stack = inputs;
  for (c10::IValue& value : stack) {
    value = convert(value, [](const at::Tensor& tensor) { return onCpu(tensor, true); });
  }
  operation(stack);
}

}  // namespace stickler
