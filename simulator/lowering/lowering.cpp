#include "simulator/lowering/lowering.h"

#include <map>

#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/lowering/lowering_context.h"

namespace stickler {

using torch::jit::Node;

NodePlace LoweringResult::placeOf(const Node* node) const {
  auto it = place.find(node);
  return it == place.end() ? NodePlace::kPlumbing : it->second;
}

namespace {

bool producesData(const LoweringContext& context, const Node& node) {
  for (const auto* output : node.outputs()) {
    if (context.isDataTensor(output)) return true;
    // A list of tensors (split, unbind) is data too.
    if (output->type()->kind() == c10::TypeKind::ListType &&
        output->type()->containedTypes().at(0)->kind() == c10::TypeKind::TensorType) {
      return true;
    }
  }
  return false;
}

void checkLayout(const LoweringContext& context, const Node& node, std::vector<Blocker>& found) {
  checkZeroLength(context, node, found);
  checkWeightStickAlignment(context, node, found);
  checkStickOffsets(context, node, found);
  checkStickDimConstraints(context, node, found);
  checkPointwiseSticks(context, node, found);
  checkCoreSpan(context, node, found);
  checkScratchpad(context, node, found);
}

}  // namespace

LoweringResult lower(const LoadedModel& model, const DeviceProfile& profile,
                     const Placement& placement, const LoweringOptions& options) {
  const LoweringContext context(model, profile, placement, options);
  LoweringResult result;
  int64_t position = -1;
  for (const Node* node : allNodes(*model.graph)) {
    ++position;
    if (!node->kind().is_aten()) {
      result.place[node] = NodePlace::kPlumbing;
      continue;
    }
    if (!producesData(context, *node)) {
      result.place[node] = NodePlace::kHost;
      continue;
    }
    if (!placement.nodeOnDevice(modulePathOf(*node), position) || placedOnHost(*node)) {
      result.place[node] = NodePlace::kCpuReference;
      continue;
    }
    const std::string op = context.opName(*node);
    const OpSupport support =
        options.apply_profile_ops ? profile.entryFor(op).support : OpSupport::kNative;
    switch (support) {
      case OpSupport::kUnsupported:
        result.place[node] = NodePlace::kBlocked;
        result.blockers.push_back(
            {"unsupported-op",
             op + " cannot be lowered by this device stack (" + profile.name + ")", node});
        break;
      case OpSupport::kCpuFallback:
        result.place[node] = NodePlace::kFallback;
        result.fallbacks.push_back({node});
        break;
      case OpSupport::kNative:
      case OpSupport::kDecomposed:
        result.place[node] = NodePlace::kDevice;
        if (options.check_layout) checkLayout(context, *node, result.blockers);
        break;
    }
  }
  formKernels(context, result);
  bindFaults(context, result);
  countTransfers(context, result);
  return result;
}

CompileReport describeLowering(const LoweringResult& result, const LoadedModel& model,
                               const DeviceProfile& profile) {
  std::map<const Node*, int64_t> aten_index;
  for (const Node* node : allNodes(*model.graph)) {
    if (node->kind().is_aten()) aten_index.emplace(node, static_cast<int64_t>(aten_index.size()));
  }
  CompileReport report;
  report.profile = profile.name;
  for (const Blocker& blocker : result.blockers) {
    const NodeOrigin origin = originOf(*blocker.node, model.modules);
    BlockerReport entry;
    entry.rule = blocker.rule;
    entry.op = blocker.node->kind().toQualString();
    entry.module = displayPath(origin.module_path);
    entry.module_path = origin.module_path;
    entry.module_class = origin.module_class;
    entry.node_index = aten_index.at(blocker.node);
    entry.code = origin.code;
    entry.python = origin.python;
    entry.message = blocker.message;
    if (auto record = model.records.find(blocker.node); record != model.records.end()) {
      entry.inputs = record->second.inputs;
      entry.outputs = record->second.outputs;
    }
    ++report.blockers_by_rule[blocker.rule];
    if (blocker.rule == "unsupported-op") ++report.unsupported_ops[entry.op];
    report.blockers.push_back(std::move(entry));
  }
  for (const Fallback& fallback : result.fallbacks) {
    FallbackReport entry;
    entry.op = fallback.node->kind().toQualString();
    entry.module = displayPath(modulePathOf(*fallback.node));
    entry.node_index = aten_index.at(fallback.node);
    entry.bytes_to_host = fallback.bytes_to_host;
    entry.bytes_to_device = fallback.bytes_to_device;
    ++report.fallbacks_by_op[entry.op];
    report.fallbacks.push_back(std::move(entry));
  }
  report.transfers = result.transfers;
  report.transfer_bytes = result.transfer_bytes;
  report.transfer_seconds = result.transfer_seconds;
  report.kernels = static_cast<int64_t>(result.kernels.size());
  for (const auto& kernel : result.kernels) {
    report.device_nodes += static_cast<int64_t>(kernel.size());
    if (kernel.size() > 1) ++report.fused_kernels;
  }
  report.compiler_error = result.compiler_error;
  if (const Node* node = result.compiler_error_node; node != nullptr && result.compiler_error) {
    const auto index = aten_index.find(node);
    report.compiler_error_site = CompilerFailureSite{
        node->kind().toQualString(), modulePathOf(*node),
        model.modules.classOf(modulePathOf(*node)), index == aten_index.end() ? -1 : index->second};
  }
  report.status = !result.blockers.empty() ? CompileStatus::kBlocked
                  : result.compiler_error  ? CompileStatus::kCompilerError
                                           : CompileStatus::kOk;
  return report;
}

}  // namespace stickler
