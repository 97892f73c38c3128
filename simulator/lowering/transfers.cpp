// The cost of cpu-fallback operators: every tensor that crosses between device and host.
#include <set>

#include "simulator/lowering/lowering_context.h"

namespace stickler {

using torch::jit::Node;

namespace {

int64_t deviceBytes(const ValueDesc& desc) {
  int64_t elements = 1;
  for (int64_t d : desc.shape) elements *= d;
  const bool floating = desc.dtype.rfind("float", 0) == 0 || desc.dtype == "bfloat16";
  return elements * (floating ? 2 : 4);  // 16-bit values; integers as int32
}

bool onDevice(NodePlace place) {
  return place == NodePlace::kDevice;
}

}  // namespace

void countTransfers(const LoweringContext& context, LoweringResult& result) {
  std::set<std::pair<const torch::jit::Value*, bool>> counted;  // (value, to host?)
  for (Fallback& fallback : result.fallbacks) {
    const Node& node = *fallback.node;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const auto* input = node.input(i);
      const ValueDesc* desc = context.inputDesc(node, i);
      if (!context.isDataTensor(input) || desc == nullptr || desc->kind != "Tensor") continue;
      if (!onDevice(result.placeOf(input->node()))) continue;
      if (!counted.insert({input, true}).second) continue;
      fallback.bytes_to_host += deviceBytes(*desc);
      ++result.transfers;
    }
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      const auto* output = node.output(i);
      const ValueDesc* desc = context.outputDesc(node, i);
      if (!context.isDataTensor(output) || desc == nullptr || desc->kind != "Tensor") continue;
      bool read_on_device = false;
      for (const Node* reader : context.consumers(output)) {
        read_on_device = read_on_device || onDevice(result.placeOf(reader));
      }
      if (!read_on_device || !counted.insert({output, false}).second) continue;
      fallback.bytes_to_device += deviceBytes(*desc);
      ++result.transfers;
    }
    result.transfer_bytes += fallback.bytes_to_host + fallback.bytes_to_device;
  }
  result.transfer_seconds =
      static_cast<double>(result.transfer_bytes) /
          context.profile.device.host_link_bytes_per_second +
      static_cast<double>(result.transfers) * context.profile.device.transfer_latency_seconds;
}

}  // namespace stickler
