#include "simulator/backends/device_run_job.h"

#include <chrono>
#include <list>
#include <mutex>
#include <utility>

#include "simulator/backends/model_host_client.h"
#include "simulator/backends/value_wire.h"
#include "simulator/graph/graph_fingerprint.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/shared_weight_files.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/large_blocks.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/task_control.h"
#include "simulator/workers/job_registry.h"
#include "simulator/workers/worker_pool.h"

namespace stickler {
namespace {

using nlohmann::json;

json placementToJson(const Placement& placement) {
  return {{"device_modules", placement.device_modules},
          {"host_modules", placement.host_modules},
          {"own_nodes_only", placement.own_nodes_only},
          {"device_nodes", placement.device_nodes}};
}

Placement placementFromJson(const json& doc) {
  Placement placement;
  placement.device_modules = doc.at("device_modules").get<std::vector<std::string>>();
  placement.host_modules = doc.at("host_modules").get<std::vector<std::string>>();
  placement.own_nodes_only = doc.at("own_nodes_only").get<bool>();
  placement.device_nodes = doc.at("device_nodes").get<std::vector<int64_t>>();
  return placement;
}

// ---- In the host ----

// The host's model, made from the last recipe it was given, and what it compiled of it.
struct HostState {
  std::mutex mutex;
  std::string key;
  std::shared_ptr<const LoadedModel> model;
  std::string fingerprint;
  struct Compiled {
    std::string key;
    std::unique_ptr<Backend> backend;  // a compiled model may point into its backend's profile
    std::unique_ptr<CompiledModel> compiled;
  };
  std::list<Compiled> compiled;  // most recently used first
};

HostState& hostState() {
  static HostState state;
  return state;
}

constexpr size_t kCompiledKept = 8;

void makeModel(HostState& state, const ModelMaker& maker, const json& header) {
  const ModelRecipe recipe = ModelRecipe::fromJson(header.at("recipe"));
  const std::string key = recipe.key();
  if (state.model && state.key == key) return;
  state.compiled.clear();
  // Another graph of the same archive (a decode's prefill, then its step) is made while the
  // last one still holds the archive's module, which it then shares (shared_modules.h);
  // another archive's model is made once this one's weights are let go.
  const bool same_archive = state.model && state.model->recipe.archive == recipe.archive &&
                            state.model->recipe.sha256 == recipe.sha256;
  if (!same_archive) state.model.reset();
  state.model = makeHostModel(maker, recipe, header.value("records", "")).model;
  state.key = key;
  state.fingerprint = graphFingerprint(*state.model->graph);
}

// The model a run names by its recipe's key: the one this host made (host_load comes first).
const LoadedModel& modelNamed(HostState& state, const json& header) {
  if (!state.model || header.at("key").get<std::string>() != state.key) {
    throw std::runtime_error("this model host holds another model than the run names");
  }
  if (header.at("fingerprint").get<std::string>() != state.fingerprint) {
    throw std::runtime_error(
        "the model host made a different graph from the model's recipe than the caller has "
        "(a bug: the adapters did not apply the same way twice)");
  }
  return *state.model;
}

// The model compiled per the run's backend, placement and pass limit, blocked or not: kept, so
// that a placement the caller tries again is not lowered again.
const CompiledModel& compiledFor(HostState& state, const json& header) {
  const std::string key = header.at("backend").get<std::string>() + "\n" +
                          header.at("placement").dump() + "\n" +
                          std::to_string(header.at("pass_limit").get<int64_t>());
  for (auto it = state.compiled.begin(); it != state.compiled.end(); ++it) {
    if (it->key != key) continue;
    state.compiled.splice(state.compiled.begin(), state.compiled, it);
    return *state.compiled.front().compiled;
  }
  HostState::Compiled entry;
  entry.key = key;
  entry.backend = makeBackend(parseBackendSpec(header.at("backend").get<std::string>()));
  entry.compiled = entry.backend->compileWithPassLimit(
      *state.model, placementFromJson(header.at("placement")), header.at("pass_limit"));
  state.compiled.push_front(std::move(entry));
  if (state.compiled.size() > kCompiledKept) state.compiled.pop_back();
  return *state.compiled.front().compiled;
}

WireMessage hostLoad(const ModelMaker& maker, const WireMessage& job) {
  HostState& state = hostState();
  std::lock_guard<std::mutex> lock(state.mutex);
  const auto start = std::chrono::steady_clock::now();
  // The weights the caller's adapters made, which the same adapters make here again.
  std::vector<int> passed;
  for (const PassedFile& file : job.files) passed.push_back(file.fd());
  const OfferedWeightFiles offered(passed);
  makeModel(state, maker, job.header);
  return {{{"fingerprint", state.fingerprint},
           {"seconds",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}},
          {}};
}

WireMessage deviceRun(const WireMessage& job, JobContext& context) {
  HostState& state = hostState();
  std::lock_guard<std::mutex> lock(state.mutex);
  modelNamed(state, job.header);
  const CompiledModel& compiled = compiledFor(state, job.header);
  // The caller does not lower what it asks for: a placement that does not compile is an answer.
  if (!compiled.ok()) return {{{"blocked", compiled.lowering().blockers.size()}}, {}};
  if (job.blobs.empty()) throw std::runtime_error("a device run job without inputs");
  RunOptions options;
  options.host_progress = &context.progress;
  options.lockstep = job.header.value("lockstep", false);
  const BackendRun run = compiled.run(decodeValues(job.blobs[0]), options);
  WireMessage reply{{{"seconds", run.seconds}}, {encodeValues(run.outputs)}};
  if (run.lockstep) reply.blobs.push_back(encodeLockstepRecord(*run.lockstep));
  return reply;
}

// ---- In the caller ----

BackendRun runStatus(BackendRun::Status status, std::string message) {
  BackendRun run;
  run.status = status;
  run.message = std::move(message);
  return run;
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

}  // namespace

HostModel makeHostModel(const ModelMaker& maker, const ModelRecipe& recipe,
                        const std::string& caller_records) {
  if (!caller_records.empty()) {
    std::shared_ptr<const LoadedModel> model = maker(recipe, /*records_from_shapes=*/true);
    if (model->records_from_shapes && recordsFingerprint(*model) == caller_records) {
      return {std::move(model), true};
    }
  }
  return {maker(recipe, /*records_from_shapes=*/false), false};
}

void registerDeviceRunJobs(ModelMaker maker) {
  registerJob("host_load", [maker = std::move(maker)](const WireMessage& job, JobContext&) {
    return hostLoad(maker, job);
  });
  registerJob("device_run", deviceRun);
}

uint64_t weightBytes(const LoadedModel& model) {
  std::unordered_set<const c10::TensorImpl*> seen;
  uint64_t bytes = 0;
  for (const at::Tensor& tensor : model.module.parameters(/*recurse=*/true)) {
    if (seen.insert(tensor.unsafeGetTensorImpl()).second) bytes += tensor.nbytes();
  }
  for (const at::Tensor& tensor : model.module.buffers(/*recurse=*/true)) {
    if (seen.insert(tensor.unsafeGetTensorImpl()).second) bytes += tensor.nbytes();
  }
  return bytes;
}

const HostFacts& hostFactsOf(const LoadedModel& model) {
  // Kept with the model, which keeps it as long as the reference lives.
  return *model.memo.get<HostFacts>("model host facts", [&model] {
    auto facts = std::make_shared<HostFacts>();
    facts->recipe = model.recipe.toJson();
    facts->key = model.recipe.key();
    facts->fingerprint = graphFingerprint(*model.graph);
    facts->records = recordsFingerprint(model);
    facts->weight_bytes = weightBytes(model);
    facts->nodes = allNodes(*model.graph);
    return facts;
  });
}

WorkerPool::Lease acquireModelHost(const LoadedModel& model, const std::atomic<bool>* cancelled) {
  const HostFacts& facts = hostFactsOf(model);
  // The family: the archive. Its other graphs (a decode's prefill and step) and adapted forms
  // take an idle host of it over, which makes them from the module it holds already.
  return WorkerPool::modelHosts().acquire(facts.key, facts.weight_bytes, "host " + model.card.name,
                                          cancelled,
                                          model.recipe.archive + "\n" + model.recipe.sha256);
}

std::optional<BackendRun> giveModelToHost(WorkerPool::Lease& lease, const LoadedModel& model,
                                          const std::atomic<bool>* cancelled,
                                          const std::string& when) {
  const HostFacts& facts = hostFactsOf(model);
  // The model is made before the run's clock starts: loading is not the run.
  const double start = phaseClock();
  WireMessage load{
      {{"kind", "host_load"}, {"recipe", facts.recipe}, {"records", facts.records}}, {}, {}};
  // The weights this process's adapters made, held once by both (shared_weight_files.h).
  for (const int fd : sealedMemoryFilesOf(*model.graph, kMaxPassedFiles)) {
    load.files.emplace_back(fd);
  }
  const JobOutcome loaded = lease.worker().run(load, defaultExecutionSeconds(), cancelled);
  if (loaded.kind == JobOutcome::Kind::kCancelled) {
    return runStatus(BackendRun::Status::kCancelled, "the device run was cancelled");
  }
  if (!loaded.completed()) {
    return runStatus(BackendRun::Status::kFailed,
                     "the model host could not make the model: " + loaded.message +
                         (loaded.stderr_tail.empty() ? "" : " (" + loaded.stderr_tail + ")"));
  }
  notePhase("model host started and made " + model.card.name + when + " (" +
                secondsText(loaded.result.header.value("seconds", 0.0)) + " s of it making)",
            phaseClock() - start);
  if (loaded.result.header.value("fingerprint", "") != facts.fingerprint) {
    return runStatus(BackendRun::Status::kFailed,
                     "the model host made a different graph from the model's recipe (a bug: "
                     "the adapters did not apply the same way twice)");
  }
  return std::nullopt;
}

BackendRun runOnModelHost(const LoadedModel& model, const DeviceRunSpec& spec,
                          const std::vector<c10::IValue>& inputs, const RunOptions& options) {
  const HostFacts& facts = hostFactsOf(model);
  const std::string& fingerprint = facts.fingerprint;
  // A host made beside the caller's reference run (model_host_ahead.h) has the model already.
  std::optional<WorkerPool::Lease> ahead = takeHostAhead(facts);
  WorkerPool::Lease lease = ahead ? std::move(*ahead) : acquireModelHost(model, options.cancelled);
  if (!ahead && lease.fresh()) {
    if (std::optional<BackendRun> failed = giveModelToHost(lease, model, options.cancelled, "")) {
      return std::move(*failed);
    }
  }

  WireMessage job;
  job.header = {{"kind", "device_run"},
                {"key", facts.key},
                {"fingerprint", fingerprint},
                {"backend", spec.backend},
                {"placement", placementToJson(spec.placement)},
                {"pass_limit", spec.pass_limit},
                {"lockstep", options.lockstep},
                {"seconds", options.timeout_seconds}};
  // The example inputs, which localization sends with every hybrid run, encoded once.
  job.blobs.push_back(&inputs != &model.example_inputs
                          ? encodeValues(inputs)
                          : *model.memo.get<std::string>("encoded example inputs", [&model] {
                              return std::make_shared<std::string>(
                                  encodeValues(model.example_inputs));
                            }));
  // The caller waits while its model host runs: the freed blocks it keeps for its own next
  // allocations would be held beside the host's for the whole run.
  releaseLargeBlocks();
  const JobOutcome outcome = lease.worker().run(job, options.timeout_seconds, options.cancelled);

  BackendRun run;
  run.seconds = outcome.seconds;
  notePhase("device run in its model host", outcome.seconds);
  run.device_log = outcome.stderr_tail;
  run.nodes_run = outcome.progress.nodes_run;
  const std::vector<const torch::jit::Node*>& nodes = facts.nodes;
  const auto& calls = model.interpreter->moduleCalls();
  if (outcome.progress.node >= 0 && outcome.progress.node < static_cast<int64_t>(nodes.size())) {
    run.node = nodes[outcome.progress.node];
  }
  auto callAt = [&](int64_t index) -> const ModuleCall* {
    return index >= 0 && index < static_cast<int64_t>(calls.size()) ? &calls[index] : nullptr;
  };
  run.module = callAt(outcome.progress.module_call);
  run.last_entered = callAt(outcome.progress.last_entered);
  switch (outcome.kind) {
    case JobOutcome::Kind::kCompleted:
      if (outcome.result.header.contains("blocked")) {
        run.status = BackendRun::Status::kBlocked;
        run.message = "the model does not compile for " + spec.backend + " with this placement (" +
                      std::to_string(outcome.result.header.value("blocked", 0)) + " blockers)";
      } else if (outcome.result.blobs.empty()) {
        run.status = BackendRun::Status::kFailed;
        run.message = "the model host answered without outputs";
      } else {
        run.outputs = decodeValues(outcome.result.blobs[0]);
        if (options.lockstep) {
          run.lockstep = outcome.result.blobs.size() > 1
                             ? decodeLockstepRecord(outcome.result.blobs[1])
                             : LockstepRecord{};
        }
        run.status = BackendRun::Status::kCompleted;
      }
      break;
    case JobOutcome::Kind::kCrashed:
      run.status = BackendRun::Status::kAborted;
      run.signal = outcome.signal;
      run.message = outcome.signal != 0
                        ? std::string("the device process died of ") + ::strsignal(outcome.signal)
                        : outcome.message;
      break;
    case JobOutcome::Kind::kTimedOut:
      run.status = BackendRun::Status::kTimedOut;
      run.message =
          "the device run did not finish within " + secondsText(options.timeout_seconds) + " s";
      break;
    case JobOutcome::Kind::kCancelled:
      run.status = BackendRun::Status::kCancelled;
      run.message = "the device run was cancelled";
      break;
    case JobOutcome::Kind::kFailed:
      run.status = BackendRun::Status::kFailed;
      run.message = outcome.message;
      break;
  }
  return run;
}

}  // namespace stickler
