// A device run given to the model host of its model (device_run_job.h): the caller's side.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/backends/backend.h"
#include "simulator/workers/worker_pool.h"

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

// A host for the model's recipe: an idle one of it, or a fresh one (lease.fresh()) to be given
// the model with giveModelToHost.
WorkerPool::Lease acquireModelHost(const LoadedModel& model, const std::atomic<bool>* cancelled);

// Makes `model` in a fresh host (host_load); a failed or cancelled run saying why when it could
// not. `when` is added to the phase line after the model's name.
std::optional<BackendRun> giveModelToHost(WorkerPool::Lease& lease, const LoadedModel& model,
                                          const std::atomic<bool>* cancelled,
                                          const std::string& when);

// The host started ahead for the model's recipe (model_host_ahead.h), once it has made the
// model, when the records it made it with are the model's; none when none was started (or it
// failed). A host made with other records is ended.
std::optional<WorkerPool::Lease> takeHostAhead(const HostFacts& facts);

// The bytes of a model's weights (parameters and buffers, each tensor once), which its host
// charges against the hosts' memory budget.
uint64_t weightBytes(const LoadedModel& model);

}  // namespace stickler
