// Kernels: which device nodes run as one kernel. Values stay in fp32 inside a kernel and are
// rounded to the device format where they leave it, so fusion changes numerics.
#include <unordered_set>

#include "simulator/lowering/lowering_context.h"

namespace stickler {

using torch::jit::Node;

namespace {

bool fusible(OpClass op_class) {
  return op_class == OpClass::kPointwise || op_class == OpClass::kReduction;
}

}  // namespace

void formKernels(const LoweringContext& context, LoweringResult& result) {
  const bool fuse = context.profile.fusion == FusionPolicy::kPointwise;
  std::unordered_set<int> closed;  // kernels that ended in a reduction
  for (const Node* node : allNodes(*context.model.graph)) {
    if (result.placeOf(node) != NodePlace::kDevice) continue;
    const OpClass op_class = opClassOf(context.opName(*node));
    int kernel = -1;
    if (fuse && fusible(op_class)) {
      // Join the kernel of a producer that has not ended in a reduction. A producer read by
      // others too still fuses: the kernel also stores that value, rounded, for them.
      for (const auto* input : node->inputs()) {
        const Node* producer = input->node();
        auto it = result.kernel_of.find(producer);
        if (it == result.kernel_of.end() || closed.count(it->second)) continue;
        if (producer->owningBlock() != node->owningBlock()) continue;
        if (!fusible(opClassOf(context.opName(*producer)))) continue;
        const int64_t limit = context.options.pass_limit;
        if (limit >= 0 && static_cast<int64_t>(result.pass_applications.size()) >= limit) break;
        kernel = it->second;
        result.pass_applications.push_back({"fusion", node, result.kernels[kernel].front()});
        break;
      }
    }
    if (kernel < 0) {
      kernel = static_cast<int>(result.kernels.size());
      result.kernels.emplace_back();
    }
    result.kernels[kernel].push_back(node);
    result.kernel_of[node] = kernel;
    if (op_class == OpClass::kReduction) closed.insert(kernel);
  }
}

}  // namespace stickler
