#include "simulator/lowering/lowering.h"

#include <map>

#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/lowering/lowering_context.h"

namespace stickler {

using nlohmann::json;
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

json descsToJson(const std::vector<ValueDesc>& descs) {
  json list = json::array();
  for (const ValueDesc& desc : descs) {
    json entry{{"kind", desc.kind}};
    if (desc.kind == "Tensor") {
      entry["shape"] = desc.shape;
      entry["dtype"] = desc.dtype;
    } else if (!desc.value.empty()) {
      entry["value"] = desc.value;
    }
    list.push_back(entry);
  }
  return list;
}

json lineToJson(const std::optional<SourceLine>& line) {
  if (!line) return nullptr;
  return {{"file", line->file}, {"line", line->line}};
}

}  // namespace

LoweringResult lower(const LoadedModel& model, const DeviceProfile& profile,
                     const Placement& placement, const LoweringOptions& options) {
  const LoweringContext context(model, profile, placement, options);
  LoweringResult result;
  for (const Node* node : allNodes(*model.graph)) {
    if (!node->kind().is_aten()) {
      result.place[node] = NodePlace::kPlumbing;
      continue;
    }
    if (!producesData(context, *node)) {
      result.place[node] = NodePlace::kHost;
      continue;
    }
    if (!placement.onDevice(modulePathOf(*node)) || placedOnHost(*node)) {
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

json loweringToJson(const LoweringResult& result, const LoadedModel& model,
                    const DeviceProfile& profile) {
  std::map<const Node*, int64_t> aten_index;
  for (const Node* node : allNodes(*model.graph)) {
    if (node->kind().is_aten()) aten_index.emplace(node, static_cast<int64_t>(aten_index.size()));
  }
  json blockers = json::array();
  std::map<std::string, int64_t> by_rule, by_op;
  for (const Blocker& blocker : result.blockers) {
    const NodeOrigin origin = originOf(*blocker.node, model.modules);
    const std::string op = blocker.node->kind().toQualString();
    json entry{
        {"rule", blocker.rule},
        {"op", op},
        {"module", displayPath(origin.module_path)},
        {"module_class", origin.module_class},
        {"node_index", aten_index.at(blocker.node)},
        {"source", {{"code", lineToJson(origin.code)}, {"python", lineToJson(origin.python)}}},
        {"message", blocker.message}};
    auto record = model.records.find(blocker.node);
    entry["inputs"] =
        record == model.records.end() ? json::array() : descsToJson(record->second.inputs);
    entry["outputs"] =
        record == model.records.end() ? json::array() : descsToJson(record->second.outputs);
    blockers.push_back(std::move(entry));
    ++by_rule[blocker.rule];
    if (blocker.rule == "unsupported-op") ++by_op[op];
  }
  json fallbacks = json::array();
  std::map<std::string, int64_t> fallback_ops;
  for (const Fallback& fallback : result.fallbacks) {
    const std::string op = fallback.node->kind().toQualString();
    ++fallback_ops[op];
    fallbacks.push_back({{"op", op},
                         {"module", displayPath(modulePathOf(*fallback.node))},
                         {"node_index", aten_index.at(fallback.node)},
                         {"bytes_to_host", fallback.bytes_to_host},
                         {"bytes_to_device", fallback.bytes_to_device}});
  }
  int64_t device_nodes = 0, fused = 0;
  for (const auto& kernel : result.kernels) {
    device_nodes += static_cast<int64_t>(kernel.size());
    if (kernel.size() > 1) ++fused;
  }
  std::string status = "ok";
  if (!result.blockers.empty()) {
    status = "blocked";
  } else if (result.compiler_error) {
    status = "compiler_error";
  }
  json report{
      {"status", status},
      {"profile", profile.name},
      {"blockers", blockers},
      {"blocker_counts", {{"by_rule", by_rule}, {"unsupported_ops", by_op}}},
      {"fallbacks",
       {{"count", result.fallbacks.size()},
        {"by_op", fallback_ops},
        {"transfers", result.transfers},
        {"transfer_bytes", result.transfer_bytes},
        {"transfer_seconds", result.transfer_seconds},
        {"nodes", fallbacks}}},
      {"kernels",
       {{"count", result.kernels.size()}, {"device_nodes", device_nodes}, {"fused", fused}}}};
  if (result.compiler_error) report["compiler_error"] = *result.compiler_error;
  return report;
}

}  // namespace stickler
