#include "simulator/interpreter/sixteen_bit.h"

#include <algorithm>
#include <unordered_set>

#include <torch/csrc/jit/ir/ir.h>

#include "simulator/interpreter/rounded_when_widened.h"

namespace stickler {

bool isSixteenBitFloat(c10::ScalarType type) {
  return type == c10::kBFloat16 || type == c10::kHalf;
}

namespace {

at::Tensor widened(const at::Tensor& tensor) {
  at::Tensor wide = tensor.to(c10::kFloat);
  roundIfRegistered(tensor, wide);
  return wide;
}

}  // namespace

c10::IValue widenSixteenBit(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (tensor.defined() && isSixteenBitFloat(tensor.scalar_type())) return widened(tensor);
    return value;
  }
  if (value.isTensorList()) {
    const c10::List<at::Tensor> list = value.toTensorList();
    bool any = false;
    for (const at::Tensor& tensor : list) {
      any = any || (tensor.defined() && isSixteenBitFloat(tensor.scalar_type()));
    }
    if (!any) return value;
    c10::List<at::Tensor> wide;
    wide.reserve(list.size());
    for (const at::Tensor& tensor : list) {
      wide.push_back(tensor.defined() && isSixteenBitFloat(tensor.scalar_type()) ? widened(tensor)
                                                                                 : tensor);
    }
    return wide;
  }
  return value;
}

namespace {

// Operators that compute nothing from the values they read: they gather, slice or reshape them,
// and a 16-bit kernel of each is exact.
bool onlyMovesData(c10::Symbol kind) {
  static const std::unordered_set<std::string> moves = {
      "aten::embedding", "aten::index_select", "aten::slice",      "aten::select",
      "aten::view",      "aten::reshape",      "aten::t",          "aten::transpose",
      "aten::permute",   "aten::expand",       "aten::unsqueeze",  "aten::squeeze",
      "aten::narrow",    "aten::detach",       "aten::contiguous", "aten::flatten",
      "aten::chunk",     "aten::split",        "aten::unbind",     "aten::size",
      "aten::dim",       "aten::numel",        "aten::alias",      "aten::unflatten"};
  return moves.count(kind.toQualString()) != 0;
}

}  // namespace

std::vector<InputWidening> wideningFor(const torch::jit::Node& node) {
  if (!node.kind().is_aten() || onlyMovesData(node.kind())) return {};
  std::vector<InputWidening> widening(node.inputs().size(), InputWidening::kTensor);
  if (const c10::FunctionSchema* schema = node.maybeSchema()) {
    const auto& arguments = schema->arguments();
    for (size_t i = 0; i < widening.size() && i < arguments.size(); ++i) {
      const c10::Argument& argument = arguments[i];
      if (argument.alias_info() != nullptr && argument.alias_info()->isWrite()) {
        widening[i] = InputWidening::kKeep;  // widening would write into a copy
      } else if (argument.name() == "dtype") {
        widening[i] = InputWidening::kDtype;
      }
    }
  }
  return widening;
}

bool mayRunLinearInSlices(const torch::jit::Node& node) {
  return node.kind() == c10::Symbol::fromQualString("aten::linear") && node.inputs().size() == 3;
}

bool runLinearInSlices(std::vector<c10::IValue>& stack, WideningBuffers& buffers) {
  if (stack.size() != 3 || !stack[1].isTensor()) return false;
  const at::Tensor& weight = stack[1].toTensor();
  if (!weight.defined() || weight.is_meta() || !isSixteenBitFloat(weight.scalar_type()) ||
      weight.dim() != 2 || weight.numel() <= kLinearSliceElements) {
    return false;
  }
  const at::Tensor input = widenSixteenBit(stack[0]).toTensor();
  const at::Tensor bias = stack[2].isTensor() ? stack[2].toTensor() : at::Tensor();
  const int64_t rows = weight.size(0);
  const int64_t step = linearSliceRows(weight.size(1));
  std::vector<at::Tensor> slices;
  for (int64_t start = 0; start < rows; start += step) {
    const int64_t length = std::min(step, rows - start);
    // Each slice in the same buffer: a fresh 16 MB block per slice would leave malloc's heap
    // fragmented by the small results between them, growing by a slice per linear.
    buffers.operatorStarts();
    const at::Tensor part = buffers.widen(weight.narrow(0, start, length));
    const at::Tensor part_bias =
        bias.defined() ? bias.narrow(0, start, length).to(c10::kFloat) : at::Tensor();
    slices.push_back(at::linear(input, part, part_bias));
  }
  at::Tensor result = slices.size() == 1 ? slices[0] : at::cat(slices, -1);
  stack.clear();
  stack.emplace_back(std::move(result));
  return true;
}

void widenInputs(const std::vector<InputWidening>& widening, std::vector<c10::IValue>& stack,
                 WideningBuffers& buffers) {
  static const auto kFloat32 = static_cast<int64_t>(c10::ScalarType::Float);
  buffers.operatorStarts();
  for (size_t i = 0; i < widening.size() && i < stack.size(); ++i) {
    c10::IValue& value = stack[i];
    switch (widening[i]) {
      case InputWidening::kKeep:
        break;
      case InputWidening::kTensor:
        if (value.isTensor()) {
          const at::Tensor& tensor = value.toTensor();
          if (tensor.defined() && isSixteenBitFloat(tensor.scalar_type())) {
            value = buffers.widen(tensor);
          }
        } else if (value.isTensorList()) {
          value = widenSixteenBit(value);
        }
        break;
      case InputWidening::kDtype:
        if (value.isInt() && isSixteenBitFloat(static_cast<c10::ScalarType>(value.toInt()))) {
          value = kFloat32;
        }
        break;
    }
  }
}

}  // namespace stickler
