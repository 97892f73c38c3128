#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/node_info.h"
#include "simulator/lowering/compile_report.h"
#include "simulator/lowering/placement.h"

namespace stickler {

// Where a node of the graph executes in a plan.
enum class NodePlace : uint8_t {
  kPlumbing,      // prim nodes: lists, tuples, control flow, constants
  kHost,          // shape arithmetic on the host (size, Int, ...): never a device kernel
  kCpuReference,  // outside the placement: the CPU reference runs it
  kDevice,        // a device kernel (native or decomposed)
  kFallback,      // a device-placed operator the stack runs on the host (cpu-fallback)
  kBlocked,       // unsupported: the plan cannot be built
};

// Something that stops the model from compiling, where it is, and which rule found it.
struct Blocker {
  std::string rule;  // unsupported-op, zero-length, weight-stick-alignment, ...
  std::string message;
  const torch::jit::Node* node = nullptr;
};

// A cpu-fallback operator and the data it makes cross between device and host.
struct Fallback {
  const torch::jit::Node* node = nullptr;
  int64_t bytes_to_host = 0;
  int64_t bytes_to_device = 0;
};

// A fault rule bound to the node it hits.
struct FaultSite {
  const FaultRule* rule = nullptr;
  const torch::jit::Node* node = nullptr;
};

// One decision of a lowering pass: fusion putting `node` into the kernel `into` starts with.
struct PassApplication {
  std::string pass;  // "fusion"
  const torch::jit::Node* node = nullptr;
  const torch::jit::Node* into = nullptr;
};

// The result of lowering a graph for a profile: every blocker found in one pass, or a plan
// (placements, kernels, fallbacks with their transfer cost, faults bound to nodes).
struct LoweringResult {
  std::vector<Blocker> blockers;
  // A compile_error fault: the backend's own message, which does not name the model's module.
  std::optional<std::string> compiler_error;
  const torch::jit::Node* compiler_error_node = nullptr;  // where the compiler failed
  std::vector<Fallback> fallbacks;
  int64_t transfers = 0;
  int64_t transfer_bytes = 0;
  double transfer_seconds = 0.0;
  std::unordered_map<const torch::jit::Node*, NodePlace> place;
  // Device kernels: each a list of nodes in execution order (one node without fusion).
  std::vector<std::vector<const torch::jit::Node*>> kernels;
  std::unordered_map<const torch::jit::Node*, int> kernel_of;
  std::vector<FaultSite> faults;
  // Every pass application made, in order (all of them, or the first pass_limit).
  std::vector<PassApplication> pass_applications;

  bool ok() const { return blockers.empty() && !compiler_error; }
  NodePlace placeOf(const torch::jit::Node* node) const;
};

struct LoweringOptions {
  bool check_layout = true;       // the stick, span and scratchpad rules
  bool apply_profile_ops = true;  // false: every operator counts as native (CPU emulation)
  // Like LLVM's -opt-bisect-limit: only the first `pass_limit` pass applications (fusions)
  // happen; -1 for all of them.
  int64_t pass_limit = -1;
};

// The aten nodes that read `value`, looking through lists, tuples and unpacking; `returned` is
// set when the value leaves through a block or graph return.
std::vector<const torch::jit::Node*> atenConsumers(const torch::jit::Value* value,
                                                   bool* returned = nullptr);

LoweringResult lower(const LoadedModel& model, const DeviceProfile& profile,
                     const Placement& placement, const LoweringOptions& options = {});

// The result as data for reports: blockers resolved to op, module, class, values, source and
// rule; the fallback summary with transfer cost; kernel counts.
CompileReport describeLowering(const LoweringResult& result, const LoadedModel& model,
                               const DeviceProfile& profile);

}  // namespace stickler
