// Faults: the profile's realistic backend bugs, bound to the device nodes they hit.
#include "simulator/faults/fault_match.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/lowering_context.h"

namespace stickler {

using torch::jit::Node;

namespace {

bool matches(const LoweringContext& context, const LoweringResult& result, const FaultRule& rule,
             const Node& node) {
  const std::string op = context.opName(node);
  if (!faultRuleNamesOp(rule, op) || !faultRuleNamesPath(rule, modulePathOf(node))) return false;
  for (const ShapePredicate& predicate : rule.shapes) {
    const ValueDesc* desc = predicate.output ? context.outputDesc(node, predicate.index)
                                             : context.inputDesc(node, predicate.index);
    if (desc == nullptr || desc->kind != "Tensor" || !shapeSatisfies(desc->shape, predicate)) {
      return false;
    }
  }
  if (!rule.fused_with.empty()) {
    const auto& kernel = result.kernels[result.kernel_of.at(&node)];
    for (const std::string& partner : rule.fused_with) {
      bool found = false;
      for (const Node* member : kernel)
        found = found || (member != &node && context.opName(*member) == partner);
      if (!found) return false;
    }
  }
  return true;
}

}  // namespace

void bindFaults(const LoweringContext& context, LoweringResult& result) {
  for (const Node* node : allNodes(*context.model.graph)) {
    if (result.placeOf(node) != NodePlace::kDevice) continue;
    for (const FaultRule& rule : context.profile.faults) {
      if (!matches(context, result, rule, *node)) continue;
      if (rule.effect.kind == FaultEffect::Kind::kCompileError) {
        if (!result.compiler_error) {
          result.compiler_error = rule.effect.message;
          result.compiler_error_node = node;
        }
        continue;
      }
      result.faults.push_back({&rule, node});
    }
  }
}

}  // namespace stickler
