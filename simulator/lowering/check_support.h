#pragma once

#include <string>
#include <vector>

#include "simulator/device/device_profile.h"
#include "simulator/graph/model_cache.h"
#include "simulator/graph/model_identity.h"
#include "simulator/lowering/compile_report.h"
#include "simulator/lowering/placement.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct CheckSupportRequest {
  std::string model;
  std::vector<std::string> inputs;          // --input flags
  std::string profile;                      // a shipped profile name or a path
  std::vector<std::string> device_modules;  // empty: the whole model on the device
};

struct CheckSupportResult {
  ModelIdentity model;
  DeviceProfile profile;
  Placement placement;
  int64_t host_nodes = 0;  // nodes an adapter placed on the host
  CompileReport compile;
};

// Lowers the model for a device profile and reports every blocker in one pass, the
// cpu-fallback operators with their transfer cost, and the kernels (docs/check-json.md).
CheckSupportResult checkSupport(const CheckSupportRequest& request, const TaskControl& control = {},
                                ModelCache* cache = nullptr);

// The compile report of a model already in hand (adapted or not): the whole model on the device
// but what its adapters keep on the host.
CompileReport compileLoaded(const LoadedModel& model, const DeviceProfile& profile);

}  // namespace stickler
