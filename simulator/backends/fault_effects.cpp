#include "simulator/backends/fault_effects.h"

#include <ATen/CPUGeneratorImpl.h>

#include <limits>
#include <random>

#include "simulator/numerics/tensor_rounding.h"

namespace stickler {

namespace aten = torch::jit::aten;

namespace {

at::Tensor narrow(const at::Tensor& tensor, NumberFormat format) {
  return roundToFormat(tensor, format);
}

// The last dimension of `values` for reductions over it.
bool reducesLastDim(const torch::jit::Node& node, const std::vector<c10::IValue>& inputs) {
  if (inputs.empty() || !inputs[0].isTensor()) return false;
  const int64_t rank = inputs[0].toTensor().dim();
  if (node.kind() == aten::softmax) {
    const int64_t dim = inputs.at(1).toInt();
    return dim == -1 || dim == rank - 1;
  }
  if (node.kind() == aten::sum || node.kind() == aten::mean) {
    if (inputs.size() < 2 || !inputs[1].isIntList()) return false;
    const auto dims = inputs[1].toIntVector();
    return dims.size() == 1 && (dims[0] == -1 || dims[0] == rank - 1);
  }
  return node.kind() == aten::layer_norm;
}

at::Tensor accumulateNarrow(const FaultEffect& effect, const torch::jit::Node& node,
                            const std::vector<c10::IValue>& inputs, const at::Tensor& output) {
  const NumberFormat format = effect.format;
  if (reducesLastDim(node, inputs)) {
    const at::Tensor x = inputs[0].toTensor().to(c10::kFloat);
    const double length = static_cast<double>(x.size(-1));
    if (node.kind() == aten::sum || node.kind() == aten::mean) {
      at::Tensor total = narrowSumLastDim(x, format, effect.chunk);
      if (node.kind() == aten::mean) total = narrow(total / length, format);
      return total.reshape(output.sizes()).to(output.scalar_type());
    }
    if (node.kind() == aten::softmax) {
      const at::Tensor shifted = x - std::get<0>(x.max(-1, /*keepdim=*/true));
      const at::Tensor e = narrow(shifted.exp(), format);
      const at::Tensor total = narrowSumLastDim(e, format, effect.chunk).unsqueeze(-1);
      return (e / total).to(output.scalar_type());
    }
    // layer_norm(input, normalized_shape, weight, bias, eps): statistics in `format`.
    const at::Tensor mean =
        narrow(narrowSumLastDim(narrow(x, format), format, effect.chunk) / length, format)
            .unsqueeze(-1);
    const at::Tensor centered = narrow(x - mean, format);
    const at::Tensor variance =
        narrow(narrowSumLastDim(narrow(centered * centered, format), format, effect.chunk) / length,
               format)
            .unsqueeze(-1);
    at::Tensor y = centered / (variance + inputs.at(4).toDouble()).sqrt();
    if (inputs.at(2).isTensor()) y = y * inputs[2].toTensor();
    if (inputs.at(3).isTensor()) y = y + inputs[3].toTensor();
    return y.to(output.scalar_type());
  }
  if (node.kind() == aten::linear || node.kind() == aten::matmul || node.kind() == aten::mm) {
    // The contraction in chunks, each partial product and the running total in `format`.
    const at::Tensor a = inputs.at(0).toTensor().to(c10::kFloat);
    const at::Tensor b =
        node.kind() == aten::linear ? inputs.at(1).toTensor().t() : inputs.at(1).toTensor();
    const int64_t k = a.size(-1);
    at::Tensor total;
    for (int64_t start = 0; start < k; start += effect.chunk) {
      const int64_t length = std::min(effect.chunk, k - start);
      const at::Tensor partial =
          narrow(at::matmul(a.narrow(-1, start, length), b.narrow(-2, start, length)), format);
      total = total.defined() ? narrow(total + partial, format) : partial;
    }
    if (node.kind() == aten::linear && inputs.size() > 2 && inputs[2].isTensor()) {
      total = narrow(total + inputs[2].toTensor(), format);
    }
    return total.to(output.scalar_type());
  }
  // Elsewhere the narrower format shows in the result.
  return narrow(output, format);
}

at::Tensor dropPartialStickTail(const FaultEffect& effect, const torch::jit::Node& node,
                                const at::Tensor& output, int64_t stick) {
  if (output.dim() == 0) return output;
  const int64_t length = output.size(-1);
  const int64_t tail = length % stick;
  if (tail == 0) return output;
  at::Tensor result = output.clone();
  at::Tensor region = result.narrow(-1, length - tail, tail);
  if (effect.fill == "zero") {
    region.zero_();
  } else {
    // Stale scratchpad contents: the same for the same node and shape, run after run.
    at::Generator generator = at::detail::createCPUGenerator(
        std::hash<std::string>{}(node.kind().toQualString()) ^ static_cast<uint64_t>(length));
    region.copy_(at::randn(region.sizes(), generator, at::TensorOptions().dtype(c10::kFloat)) *
                 100);
  }
  return result;
}

}  // namespace

at::Tensor narrowSumLastDim(const at::Tensor& values, NumberFormat format, int64_t chunk) {
  const at::Tensor x = values.to(c10::kFloat);
  const int64_t length = x.size(-1);
  at::Tensor total;
  for (int64_t start = 0; start < length; start += chunk) {
    const at::Tensor partial =
        roundToFormat(x.narrow(-1, start, std::min(chunk, length - start)).sum(-1), format);
    total = total.defined() ? roundToFormat(total + partial, format) : partial;
  }
  return total;
}

at::Tensor applyFault(const FaultEffect& effect, const torch::jit::Node& node,
                      const std::vector<c10::IValue>& kernel_inputs, const at::Tensor& output,
                      int64_t stick_elements) {
  if (!output.is_floating_point()) return output;
  switch (effect.kind) {
    case FaultEffect::Kind::kAccumulateNarrow:
      return accumulateNarrow(effect, node, kernel_inputs, output);
    case FaultEffect::Kind::kDropPartialStickTail:
      return dropPartialStickTail(effect, node, output, stick_elements);
    case FaultEffect::Kind::kWrongScale:
      return output * effect.factor;
    case FaultEffect::Kind::kNanOnRange:
      return at::where((output >= effect.low) & (output <= effect.high),
                       at::full({}, std::numeric_limits<float>::quiet_NaN(), output.options()),
                       output);
    case FaultEffect::Kind::kLeak:
      return at::where(output == 0, at::full({}, effect.value, output.options()), output);
    case FaultEffect::Kind::kRacyReduction: {
      // Partial sums combined in whatever order the units finish: a different rounding each
      // run, so the seed comes from outside the simulation.
      at::Generator generator = at::detail::createCPUGenerator(std::random_device{}());
      const at::Tensor noise =
          at::rand(output.sizes(), generator, at::TensorOptions().dtype(c10::kFloat)) * 2 - 1;
      return output * (1 + effect.value * noise.to(output.scalar_type()));
    }
    case FaultEffect::Kind::kCompileError:
    case FaultEffect::Kind::kRuntimeAbort:
      break;
  }
  return output;
}

}  // namespace stickler
