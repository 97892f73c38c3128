#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/graph/model_cache.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct CheckSupportRequest {
  std::string model;
  std::vector<std::string> inputs;          // --input flags
  std::string profile = "spyre-2026";       // a shipped profile name or a path
  std::vector<std::string> device_modules;  // empty: the whole model on the device
};

// Lowers the model for a device profile and reports every blocker in one pass, the
// cpu-fallback operators with their transfer cost, and the kernels (docs/check-json.md).
nlohmann::json checkSupport(const CheckSupportRequest& request, const TaskControl& control = {},
                            ModelCache* cache = nullptr);

}  // namespace stickler
