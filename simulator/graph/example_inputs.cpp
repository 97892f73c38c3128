#include "simulator/graph/example_inputs.h"

#include "simulator/support/errors.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace stickler {

c10::ScalarType toScalarType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return c10::kFloat;
    case DType::kFloat16:
      return c10::kHalf;
    case DType::kBFloat16:
      return c10::kBFloat16;
    case DType::kFloat64:
      return c10::kDouble;
    case DType::kInt64:
      return c10::kLong;
    case DType::kInt32:
      return c10::kInt;
    case DType::kInt8:
      return c10::kChar;
    case DType::kUInt8:
      return c10::kByte;
    case DType::kBool:
      return c10::kBool;
  }
  return c10::kFloat;
}

at::Tensor makeExampleTensor(const InputSpec& input, at::Generator& generator) {
  const auto dtype = toScalarType(input.dtype);
  const auto options = at::TensorOptions().dtype(dtype);
  switch (input.kind) {
    case InputKind::kTokenIds:
      return at::randint(0, *input.vocab_size, input.shape, generator, options.dtype(c10::kLong))
          .to(dtype);
    case InputKind::kMask: {
      at::Tensor mask = at::ones(input.shape, options);
      if (input.left_padding > 0) mask.narrow(-1, 0, input.left_padding).zero_();
      return mask;
    }
    case InputKind::kCachePosition: {
      const auto start = static_cast<int64_t>(input.low);
      auto slots = at::arange(start, start + input.shape.back(), options.dtype(c10::kLong));
      return slots.expand(input.shape).contiguous().to(dtype);
    }
    case InputKind::kPositions: {
      if (input.shape.empty()) return at::zeros({}, options);
      auto positions = at::arange(input.shape.back(), options.dtype(c10::kLong));
      return positions.expand(input.shape).contiguous().to(dtype);
    }
    case InputKind::kInteger:
      return at::randint(static_cast<int64_t>(std::ceil(input.low)),
                         static_cast<int64_t>(std::ceil(input.high)), input.shape, generator,
                         options.dtype(c10::kLong))
          .to(dtype);
    case InputKind::kCaptured:
      throw UserError("input '" + input.name + "' is of kind captured: its values come from " +
                      ModelCard::kCapturedInputsPath + " in the archive");
    case InputKind::kAuto:
    case InputKind::kFloat:
    case InputKind::kPastKeys:
    case InputKind::kPastValues:
      break;
  }
  auto uniform = at::rand(input.shape, generator, at::TensorOptions().dtype(c10::kDouble));
  return (uniform * (input.high - input.low) + input.low).to(dtype);
}

std::vector<c10::IValue> makeExampleInputs(const std::vector<InputSpec>& inputs,
                                           const c10::FunctionSchema& forward, uint64_t seed,
                                           const std::vector<at::Tensor>& captured) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  const auto& arguments = forward.arguments();
  std::vector<c10::IValue> values;
  values.reserve(arguments.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].kind == InputKind::kCaptured && i < captured.size() && captured[i].defined()) {
      values.emplace_back(captured[i].clone());
    } else {
      values.emplace_back(makeExampleTensor(inputs[i], generator));
    }
  }
  for (size_t i = inputs.size() + 1; i < arguments.size(); ++i) {
    values.push_back(*arguments[i].default_value());
  }
  return values;
}

}  // namespace stickler
