// A device run given to the model host of its model (device_run_job.h): the caller's side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/backends/backend.h"

namespace stickler {

// What the caller tells a model host of a model, worked out once per model.
struct HostFacts {
  nlohmann::json recipe;
  std::string key;  // the recipe's: the host's key in the pool
  std::string fingerprint;
  std::string records;  // recordsFingerprint: the host records from shapes when they agree
  uint64_t weight_bytes = 0;
  std::vector<const torch::jit::Node*> nodes;  // allNodes(): where a run stopped, by position
};
const HostFacts& hostFactsOf(const LoadedModel& model);

// What the host compiles: the backend as named, the placement and the pass limit.
struct DeviceRunSpec {
  std::string backend;  // spyre-sim:<profile>
  Placement placement;
  int64_t pass_limit = -1;
};

// Runs `inputs` on `model` compiled per `spec`, on the host for the model's recipe (started and
// given the model first when there is none idle). Where an aborted run stopped is read from
// the host's progress and named with `model`'s own nodes and module calls.
BackendRun runOnModelHost(const LoadedModel& model, const DeviceRunSpec& spec,
                          const std::vector<c10::IValue>& inputs, const RunOptions& options);

// The bytes of a model's weights (parameters and buffers, each tensor once), which its host
// charges against the hosts' memory budget.
uint64_t weightBytes(const LoadedModel& model);

}  // namespace stickler
