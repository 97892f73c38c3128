#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/graph/model_cache.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct RunRequest {
  std::string model;
  std::vector<std::string> inputs;  // --input flags
  std::string backend = "spyre-sim:spyre-2026";
  std::vector<std::string> device_modules;  // hybrid runs: only these modules on the device
  double timeout_seconds = 300;
  // The model already in hand (adapted or not): run as it is, `model` and `inputs` unread.
  std::shared_ptr<const LoadedModel> loaded;
};

// What `stickler run` exits with.
enum RunExitStatus : int {
  kRunPass = 0,
  kRunFail = 1,     // the end-to-end verdict failed
  kRunBlocked = 3,  // the model did not compile: blockers, or the compiler failed
  kRunAborted = 4,  // the device aborted, hung or failed at run time
};

// Runs the model on the backend and on the CPU reference, compares the outputs end to end and
// gives a verdict (docs/run-json.md). The report's "exit_status" is one of RunExitStatus.
nlohmann::json runModel(const RunRequest& request, const TaskControl& control = {},
                        ModelCache* cache = nullptr);

}  // namespace stickler
