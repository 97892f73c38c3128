// Capacity: what one core can address (the per-core span) and what one kernel must hold in
// its scratchpad at once.
#include <algorithm>
#include <cstdio>

#include "simulator/device/core_span.h"
#include "simulator/lowering/lowering_context.h"

namespace stickler {

using torch::jit::Node;

namespace {

constexpr int64_t kBytesPerValue = DeviceProfile::kBytesPerValue;
// The PE accumulates in float32 (knowledge/pages/spyre-hardware.md).
constexpr int64_t kAccumulatorBytesPerValue = 4;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", bytes / 1048576.0);
  return text;
}

// The contraction size of a matmul-like node: the last dimension of its first data operand.
std::optional<int64_t> contractionSize(const LoweringContext& context, const Node& node) {
  if (auto weight = weightOperand(context, node)) return weight->in_features;
  const size_t first = context.opName(node) == "aten::addmm" ? 1 : 0;
  const ValueDesc* a = context.inputDesc(node, first);
  if (a == nullptr || a->kind != "Tensor" || a->shape.empty()) return std::nullopt;
  return a->shape.back();
}

// The length of the row a reduction over the last dimension must hold, if it is one.
std::optional<int64_t> reducedRow(const LoweringContext& context, const Node& node) {
  const std::string op = context.opName(node);
  const ValueDesc* input = context.inputDesc(node, 0);
  if (input == nullptr || input->kind != "Tensor" || input->shape.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(input->shape.size());
  if (op == "aten::softmax" || op == "aten::log_softmax") {
    auto dim = context.intInput(node, 1);
    if (!dim || normalizeDim(*dim, rank) != rank - 1) return std::nullopt;
  } else if (op == "aten::sum" || op == "aten::mean" || op == "aten::amax" || op == "aten::amin") {
    auto reduced = context.intListInput(node, 1);
    if (!reduced || reduced->size() != 1 || normalizeDim((*reduced)[0], rank) != rank - 1) {
      return std::nullopt;
    }
  } else if (op != "aten::layer_norm" && op != "aten::rms_norm") {
    return std::nullopt;
  }
  return input->shape.back();
}

}  // namespace

void checkCoreSpan(const LoweringContext& context, const Node& node,
                   std::vector<Blocker>& blockers) {
  const auto weight = weightOperand(context, node);
  if (!weight) return;
  const int64_t stick = context.stick();
  const int64_t span = context.profile.device.core_span_bytes;
  const SpanCheck check =
      checkCoreSpan(weight->out_features, weight->in_features, stick, kBytesPerValue, span);
  if (check.fits) return;
  std::string name = context.weightName(weight->value);
  if (name.empty()) name = "the weight";
  std::string message = name + ": " + std::to_string(weight->out_features) + " outputs fill " +
                        std::to_string(check.sticks) + " sticks, split across cores in slices of " +
                        std::to_string(check.largest_prime_factor) +
                        " sticks (its largest prime factor); one slice is " +
                        megabytes(check.slice_bytes) + ", more than the per-core span of " +
                        megabytes(span);
  const int64_t padded =
      sticksThatFitSpan(weight->out_features, weight->in_features, stick, kBytesPerValue, span);
  if (padded > 0) {
    message += "; padding the outputs to " + std::to_string(padded) + " sticks (" +
               std::to_string(padded * stick) + ") would fit";
  }
  blockers.push_back(Blocker{"core-span", message, &node});
}

void checkScratchpad(const LoweringContext& context, const Node& node,
                     std::vector<Blocker>& blockers) {
  const int64_t stick = context.stick();
  const int64_t scratchpad = context.profile.device.scratchpad_bytes;
  const OpClass op_class = opClassOf(context.opName(node));
  if (op_class == OpClass::kMatmul) {
    auto k = contractionSize(context, node);
    if (!k) return;
    // A long contraction is split into chunks whose partial sums accumulate in float32, as every
    // matmul compiler does: the smallest tile is 64 rows of A and 64 columns of B over one stick
    // of K, and the 64x64 float32 accumulator of C, whatever K is (an assumption:
    // docs/simulator-assumptions.md). Only a scratchpad smaller than that blocks a matmul.
    const int64_t k_chunk = std::min(roundUp(*k, stick), stick);
    const int64_t bytes =
        2 * stick * k_chunk * kBytesPerValue + stick * stick * kAccumulatorBytesPerValue;
    if (bytes > scratchpad) {
      blockers.push_back(Blocker{"scratchpad-tiling",
                                 "the smallest matmul tile (64 x 64 blocks of A and B over one "
                                 "stick of the contraction, and a float32 64 x 64 accumulator) "
                                 "needs " +
                                     megabytes(bytes) + ", more than the " + megabytes(scratchpad) +
                                     " scratchpad",
                                 &node});
    }
    return;
  }
  if (op_class != OpClass::kReduction) return;
  auto row = reducedRow(context, node);
  if (!row) return;
  // A row in and a row out, each padded to whole sticks.
  const int64_t bytes = 2 * roundUp(*row, stick) * kBytesPerValue;
  if (bytes > scratchpad) {
    blockers.push_back(Blocker{"scratchpad-tiling",
                               "a row of " + std::to_string(*row) + " values in and out needs " +
                                   megabytes(bytes) + ", more than the " + megabytes(scratchpad) +
                                   " scratchpad",
                               &node});
  }
}

}  // namespace stickler
