// Stick alignment: the device stores tensors in 128-byte sticks along their innermost
// dimension (64 values of a 16-bit format); these rules find what cannot be laid out so.
#include <algorithm>

#include "simulator/lowering/lowering_context.h"

namespace stickler {

using torch::jit::Node;

namespace {

Blocker blocker(const Node& node, std::string rule, std::string message) {
  return Blocker{std::move(rule), std::move(message), &node};
}

std::string dims(const std::vector<int64_t>& shape) {
  return shapeString(shape);
}

}  // namespace

void checkZeroLength(const LoweringContext& context, const Node& node,
                     std::vector<Blocker>& blockers) {
  const NodeRecord* record = context.record(node);
  if (record == nullptr) return;
  for (const auto* list : {&record->inputs, &record->outputs}) {
    for (const ValueDesc& desc : *list) {
      if (desc.kind != "Tensor") continue;
      if (std::find(desc.shape.begin(), desc.shape.end(), 0) == desc.shape.end()) continue;
      blockers.push_back(blocker(node, "zero-length",
                                 "a zero-length tensor " + dims(desc.shape) +
                                     " reaches the device, which crashes on zero-length tensors"));
      return;
    }
  }
}

void checkWeightStickAlignment(const LoweringContext& context, const Node& node,
                               std::vector<Blocker>& blockers) {
  // Only the output size: the contraction (the input size) is zero-padded to whole sticks by
  // the compiler, as for every matmul's B (docs/simulator-assumptions.md, "Weight alignment").
  const auto weight = weightOperand(context, node);
  if (!weight) return;
  const int64_t stick = context.stick();
  if (weight->out_features % stick == 0) return;
  std::string name = context.weightName(weight->value);
  if (name.empty()) {
    name = weight->value->node()->kind() == torch::jit::prim::Constant ? "the constant matrix"
                                                                       : "the computed matrix";
  }
  blockers.push_back(blocker(
      node, "weight-stick-alignment",
      name + " [" + std::to_string(weight->out_features) + " out, " +
          std::to_string(weight->in_features) + " in]: its output size " +
          std::to_string(weight->out_features) + " is not a multiple of " + std::to_string(stick) +
          " (one " + std::to_string(context.profile.device.stick_bytes) +
          "-byte stick); hidden, intermediate and vocabulary sizes, each some matrix's output "
          "size, must fill whole sticks"));
}

void checkStickOffsets(const LoweringContext& context, const Node& node,
                       std::vector<Blocker>& blockers) {
  const std::string op = context.opName(node);
  if (!context.profile.entryFor(op).layout.count("stick_aligned_offsets")) return;
  const ValueDesc* input = context.inputDesc(node, 0);
  if (input == nullptr || input->kind != "Tensor") return;
  const auto stick_dim = stickDimOf(*input);
  if (!stick_dim) return;
  const int64_t rank = static_cast<int64_t>(input->shape.size());
  const int64_t size = input->shape[*stick_dim];
  const int64_t stick = context.stick();

  // The offsets along the stick dimension at which pieces start.
  std::vector<int64_t> starts;
  std::optional<int64_t> dim;
  if (op == "aten::slice" || op == "aten::slice_scatter") {
    const size_t base = op == "aten::slice" ? 1 : 2;
    dim = context.intInput(node, base);
    starts.push_back(context.intInput(node, base + 1).value_or(0));
    const int64_t step = context.intInput(node, base + 3).value_or(1);
    if (step != 1 && dim && normalizeDim(*dim, rank) == *stick_dim) {
      blockers.push_back(blocker(node, "stick-strided-slice",
                                 "a slice with step " + std::to_string(step) +
                                     " along the stick dimension reads across sticks"));
      return;
    }
  } else if (op == "aten::narrow") {
    dim = context.intInput(node, 1);
    starts.push_back(context.intInput(node, 2).value_or(0));
  } else if (op == "aten::split" || op == "aten::chunk") {
    dim = context.intInput(node, 2);
    auto amount = context.intInput(node, 1);
    if (!amount || *amount <= 0) return;
    const int64_t piece = op == "aten::split" ? *amount : (size + *amount - 1) / *amount;
    for (int64_t start = piece; start < size; start += piece) starts.push_back(start);
  } else if (op == "aten::split_with_sizes") {
    dim = context.intInput(node, 2);
    auto sizes = context.intListInput(node, 1);
    if (!sizes) return;
    int64_t start = 0;
    for (size_t i = 0; i + 1 < sizes->size(); ++i) starts.push_back(start += (*sizes)[i]);
  } else {
    return;
  }
  if (!dim || normalizeDim(*dim, rank) != *stick_dim) return;
  for (int64_t start : starts) {
    if (start < 0) start = std::max<int64_t>(start + size, 0);  // x[..., -1:]
    if (start >= size) continue;
    if (start % stick == 0) continue;
    // A slice at half of a head: rotate_half (RoPE) negating its second half, or the cut
    // between the rotary part and the pass-through rest of a partial rotary (GPT-J's
    // rotary_dim 32 of head 64). Either starts a piece mid-stick; what clears it differs.
    if (op == "aten::slice" && start * 2 == size) {
      const bool rotate_half =
          std::any_of(node.output()->uses().begin(), node.output()->uses().end(),
                      [](const torch::jit::Use& use) {
                        return use.user->kind() == c10::Symbol::fromQualString("aten::neg");
                      });
      const std::string at = std::to_string(size) + " at " + std::to_string(start);
      blockers.push_back(blocker(
          node, "rope-head-dim",
          rotate_half
              ? "rotate_half splits head_dim " + at + ": RoPE as a matmul needs head_dim/2 >= " +
                    std::to_string(stick) + " (one stick); pad the attention heads (e.g. 64 -> 128)"
              : "a rotary/pass-through cut splits head_dim " + at +
                    " (a partial rotary: the first " + std::to_string(start) +
                    " values rotate, the rest pass through): the pass-through part starts "
                    "inside a stick. Padding whole heads does not move the cut; pad the rotary "
                    "part to whole sticks (" +
                    std::to_string(start) + " -> " + std::to_string(stick) +
                    " values, the padding rotating by zero) or keep the two parts in separate "
                    "tensors, each starting on a stick boundary"));
    } else {
      blockers.push_back(blocker(
          node, "stick-misaligned-offset",
          context.opName(node) + " starts a piece at offset " + std::to_string(start) +
              " of the stick dimension (size " + std::to_string(size) +
              "), inside a stick: pieces must start at multiples of " + std::to_string(stick)));
    }
    return;
  }
}

void checkStickDimConstraints(const LoweringContext& context, const Node& node,
                              std::vector<Blocker>& blockers) {
  const std::string op = context.opName(node);
  const OpEntry& entry = context.profile.entryFor(op);
  const ValueDesc* input = context.inputDesc(node, 0);
  if (entry.layout.count("not_on_stick_dim") && input && input->kind == "Tensor") {
    const auto stick_dim = stickDimOf(*input);
    auto flip_dims = context.intListInput(node, 1);
    if (stick_dim && flip_dims) {
      for (int64_t d : *flip_dims) {
        if (normalizeDim(d, static_cast<int64_t>(input->shape.size())) == *stick_dim) {
          blockers.push_back(blocker(node, "stick-dim-reversal",
                                     op + " reverses the stick dimension (dim " +
                                         std::to_string(*stick_dim) +
                                         "): the device cannot reverse values within sticks"));
          break;
        }
      }
    }
  }
  if (entry.layout.count("unit_step_only") && op == "aten::slice_scatter") {
    const int64_t step = context.intInput(node, 5).value_or(1);
    if (step != 1) {
      blockers.push_back(blocker(node, "scatter-step",
                                 "slice_scatter with step " + std::to_string(step) +
                                     " (the device supports unit steps only)"));
    }
  }
  if (entry.layout.count("materializing_consumer")) {
    bool returned = false;
    const auto readers = context.consumers(node.output(), &returned);
    const Node* view_reader = nullptr;
    for (const Node* reader : readers) {
      const std::string name = context.opName(*reader);
      if (opClassOf(name) == OpClass::kView && name != "aten::contiguous" &&
          name != "aten::reshape") {
        view_reader = reader;
      }
    }
    if (returned || readers.empty() || view_reader) {
      const std::string where = view_reader ? "it feeds " + context.opName(*view_reader)
                                            : std::string("its result leaves the graph as is");
      blockers.push_back(blocker(node, "unmaterialized-expand",
                                 op +
                                     " is lowered only when an operator that materializes it "
                                     "follows; " +
                                     where));
    }
  }
}

bool sticksMismatch(const ValueDesc& x, const ValueDesc& y) {
  if (x.kind != "Tensor" || y.kind != "Tensor") return false;
  const auto x_dim = stickDimOf(x);
  const auto y_dim = stickDimOf(y);
  if (!x_dim || !y_dim) return false;
  // Broadcasting aligns shapes from the right, so stick dimensions are compared from there.
  const int64_t x_from_right = static_cast<int64_t>(x.shape.size()) - 1 - *x_dim;
  const int64_t y_from_right = static_cast<int64_t>(y.shape.size()) - 1 - *y_dim;
  if (x_from_right == y_from_right) return false;
  auto sizeFromRight = [](const ValueDesc& desc, int64_t from_right) -> int64_t {
    const int64_t index = static_cast<int64_t>(desc.shape.size()) - 1 - from_right;
    return index >= 0 ? desc.shape[index] : 1;
  };
  // An operand broadcast along the other's stick dimension can follow its layout.
  return sizeFromRight(x, y_from_right) != 1 && sizeFromRight(y, x_from_right) != 1;
}

void checkPointwiseSticks(const LoweringContext& context, const Node& node,
                          std::vector<Blocker>& blockers) {
  if (!isBinaryPointwise(context.opName(node))) return;
  std::vector<const ValueDesc*> operands;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (!context.isDataTensor(node.input(i))) continue;
    const ValueDesc* desc = context.inputDesc(node, i);
    if (desc != nullptr) operands.push_back(desc);
  }
  for (size_t a = 0; a < operands.size(); ++a) {
    for (size_t b = a + 1; b < operands.size(); ++b) {
      const ValueDesc& x = *operands[a];
      const ValueDesc& y = *operands[b];
      if (!sticksMismatch(x, y)) continue;
      blockers.push_back(blocker(
          node, "stick-mismatch",
          "operands are sticked on different dimensions (dim " + std::to_string(*stickDimOf(x)) +
              " of " + dims(x.shape) + ", dim " + std::to_string(*stickDimOf(y)) + " of " +
              dims(y.shape) + "): no mechanism to resolve stick incompatibility"));
      return;
    }
  }
}

}  // namespace stickler
