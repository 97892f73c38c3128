#include "simulator/backends/model_host_ahead.h"

#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "simulator/backends/model_host_client.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/phase_times.h"
#include "simulator/workers/worker_pool.h"

namespace stickler {

struct HostAhead {
  std::string key;      // the model's recipe's: the host's key in the pool
  std::string records;  // what the host made the model with (recordsFingerprint)
  std::future<std::optional<WorkerPool::Lease>> made;
};

namespace {

// The hosts started ahead and not yet taken over, by key: the first device run of a model finds
// its own here without being handed it.
struct Started {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<HostAhead>> by_key;
};

Started& started() {
  static Started registry;
  return registry;
}

// Takes `state` out of the registry; false when a run took it over first.
bool unregister(const std::shared_ptr<HostAhead>& state) {
  const std::lock_guard<std::mutex> lock(started().mutex);
  const auto it = started().by_key.find(state->key);
  if (it == started().by_key.end() || it->second != state) return false;
  started().by_key.erase(it);
  return true;
}

// The host, given the model; none when it could not be made (the first device run makes one
// again and reports why).
std::optional<WorkerPool::Lease> makeAhead(const std::shared_ptr<const LoadedModel>& model,
                                           const std::atomic<bool>* cancelled) {
  try {
    WorkerPool::Lease lease = acquireModelHost(*model, cancelled);
    if (lease.fresh() &&
        giveModelToHost(lease, *model, cancelled, " ahead, beside the reference run")) {
      lease.end();
      return std::nullopt;
    }
    return lease;
  } catch (const std::exception&) {  // cancelled, or no process could be started
    return std::nullopt;
  }
}

}  // namespace

ModelHostAhead& ModelHostAhead::operator=(ModelHostAhead&& other) noexcept {
  if (this != &other) {
    finish();
    state_ = std::move(other.state_);
  }
  return *this;
}

ModelHostAhead::~ModelHostAhead() {
  finish();
}

void ModelHostAhead::finish() {
  if (state_ == nullptr) return;
  if (unregister(state_)) {
    // Made for a run that never came: what it holds is a guess no caller confirmed.
    if (std::optional<WorkerPool::Lease> lease = state_->made.get()) lease->end();
  }
  state_.reset();
}

ModelHostAhead startModelHostAhead(std::shared_ptr<const LoadedModel> model,
                                   const std::atomic<bool>* cancelled) {
  ModelHostAhead ahead;
  if (model == nullptr) return ahead;
  const HostFacts& facts = hostFactsOf(*model);
  auto state = std::make_shared<HostAhead>();
  state->key = facts.key;
  state->records = facts.records;
  const std::lock_guard<std::mutex> lock(started().mutex);
  if (started().by_key.count(state->key) != 0) return ahead;  // one is being made already
  state->made = std::async(std::launch::async, makeAhead, std::move(model), cancelled);
  started().by_key[state->key] = state;
  ahead.state_ = std::move(state);
  return ahead;
}

std::optional<WorkerPool::Lease> takeHostAhead(const HostFacts& facts) {
  std::shared_ptr<HostAhead> state;
  {
    const std::lock_guard<std::mutex> lock(started().mutex);
    const auto it = started().by_key.find(facts.key);
    if (it == started().by_key.end()) return std::nullopt;
    state = it->second;
    started().by_key.erase(it);
  }
  std::optional<WorkerPool::Lease> lease = state->made.get();
  if (lease && state->records != facts.records) {
    // Shapes said something else than the values did: the host would lower the model otherwise
    // than its caller.
    lease->end();
    notePhase("ended the model host made ahead: its records from shapes are not the model's", -1);
    return std::nullopt;
  }
  return lease;
}

}  // namespace stickler
