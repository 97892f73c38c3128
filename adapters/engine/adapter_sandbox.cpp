#include "adapters/engine/adapter_sandbox.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <csignal>
#include <cstring>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/recipe_replay.h"
#include "adapters/engine/rewrite_compiler.h"
#include "adapters/engine/sandbox_jobs.h"
#include "simulator/backends/model_host_client.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/task_control.h"
#include "simulator/support/text_format.h"
#include "simulator/workers/job_registry.h"
#include "simulator/workers/sandbox_limits.h"
#include "simulator/workers/syscall_filter.h"
#include "simulator/workers/worker_main.h"
#include "simulator/workers/worker_pool.h"
#include "simulator/workers/worker_process.h"

namespace stickler {
namespace {

using nlohmann::json;

thread_local int code_runs_here = 0;

// TorchScript's interpreter reports "The following operation failed in the TorchScript
// interpreter.", a traceback, and the error itself last: say the error.
std::string conciseError(const std::string& what) {
  if (what.rfind("The following operation failed", 0) != 0) return firstLine(what);
  size_t end = what.find_last_not_of("\n ");
  if (end == std::string::npos) return firstLine(what);
  const size_t start = what.rfind('\n', end);
  return what.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

std::vector<ConditionVerdict> runAll(
    torch::jit::Function& condition,
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments) {
  std::vector<ConditionVerdict> verdicts;
  for (const auto& stack : arguments) {
    if (!stack) {
      verdicts.push_back({ConditionVerdict::Kind::kTurnedDown, ""});
      continue;
    }
    try {
      const bool holds = condition(*stack).toBool();
      verdicts.push_back(
          {holds ? ConditionVerdict::Kind::kHolds : ConditionVerdict::Kind::kTurnedDown, ""});
    } catch (const std::exception& e) {
      verdicts.push_back({ConditionVerdict::Kind::kFailed, conciseError(e.what())});
    }
  }
  return verdicts;
}

// What a condition sees of an activation is a meta tensor (its dtype and shape), which pickling
// cannot carry: it travels as ("meta", dtype, sizes).
c10::IValue encodeArgument(const c10::IValue& value) {
  if (value.isTensor() && value.toTensor().is_meta()) {
    const at::Tensor& tensor = value.toTensor();
    return c10::ivalue::Tuple::create({c10::IValue(std::string("meta")),
                                       c10::IValue(static_cast<int64_t>(tensor.scalar_type())),
                                       c10::IValue(tensor.sizes().vec())});
  }
  if (value.isList()) {
    c10::impl::GenericList list(c10::AnyType::get());
    for (const c10::IValue& element : value.toListRef()) list.push_back(encodeArgument(element));
    return c10::ivalue::Tuple::create({c10::IValue(std::string("list")), c10::IValue(list),
                                       c10::IValue(value.type()->annotation_str())});
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const c10::IValue& element : value.toTupleRef().elements()) {
      elements.push_back(encodeArgument(element));
    }
    return c10::ivalue::Tuple::create(
        {c10::IValue(std::string("tuple")), c10::ivalue::Tuple::create(std::move(elements))});
  }
  return c10::ivalue::Tuple::create({c10::IValue(std::string("value")), value});
}

c10::TypePtr listElementType(const std::string& annotation) {
  if (annotation == "List[int]") return c10::IntType::get();
  if (annotation == "List[float]") return c10::FloatType::get();
  if (annotation == "List[bool]") return c10::BoolType::get();
  if (annotation == "List[Tensor]") return c10::TensorType::get();
  if (annotation == "List[Optional[int]]") return c10::OptionalType::create(c10::IntType::get());
  throw std::runtime_error("a condition argument of type " + annotation +
                           " cannot reach a sandbox");
}

c10::IValue decodeArgument(const c10::IValue& encoded) {
  const auto& fields = encoded.toTupleRef().elements();
  const std::string tag = fields.at(0).toStringRef();
  if (tag == "meta") {
    return at::empty(fields.at(2).toIntVector(),
                     at::TensorOptions()
                         .dtype(static_cast<c10::ScalarType>(fields.at(1).toInt()))
                         .device(at::kMeta));
  }
  if (tag == "list") {
    c10::impl::GenericList list(listElementType(fields.at(2).toStringRef()));
    for (const c10::IValue& element : fields.at(1).toListRef()) {
      list.push_back(decodeArgument(element));
    }
    return list;
  }
  if (tag == "tuple") {
    std::vector<c10::IValue> elements;
    for (const c10::IValue& element : fields.at(1).toTupleRef().elements()) {
      elements.push_back(decodeArgument(element));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  return fields.at(1);
}

std::string pickledArguments(
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments) {
  c10::impl::GenericList all(c10::AnyType::get());
  for (const auto& stack : arguments) {
    if (!stack) {
      all.push_back(c10::IValue());
      continue;
    }
    std::vector<c10::IValue> encoded;
    for (const c10::IValue& value : *stack) encoded.push_back(encodeArgument(value));
    all.push_back(c10::ivalue::Tuple::create(std::move(encoded)));
  }
  const auto bytes = torch::jit::pickle_save(c10::IValue(all));
  return std::string(bytes.begin(), bytes.end());
}

std::vector<std::optional<std::vector<c10::IValue>>> unpickledArguments(const std::string& bytes) {
  const c10::IValue all = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  std::vector<std::optional<std::vector<c10::IValue>>> arguments;
  for (const c10::IValue& stack : all.toListRef()) {
    if (stack.isNone()) {
      arguments.emplace_back(std::nullopt);
      continue;
    }
    std::vector<c10::IValue> decoded;
    for (const c10::IValue& value : stack.toTupleRef().elements()) {
      decoded.push_back(decodeArgument(value));
    }
    arguments.emplace_back(std::move(decoded));
  }
  return arguments;
}

json adapterToJson(const AdapterFile& adapter) {
  return {{"source", adapter.source}, {"path", adapter.path}, {"reviewed", adapter.reviewed}};
}

AdapterFile adapterFromJson(const json& doc) {
  AdapterFile adapter =
      parseAdapterFile(doc.at("source").get<std::string>(), doc.at("path").get<std::string>());
  adapter.reviewed = doc.at("reviewed").get<bool>();
  return adapter;
}

// Runs `job` in a fresh sandbox worker under this thread's execution limit, and returns what it
// answered. The limit counts from when the adapter's code starts (the worker's alarm), not while
// the worker starts and makes its model. What ended it otherwise is an error that names the
// adapter and what it was doing ("cube.py: condition did not finish within 1 s").
// A condition needs no model: its sandbox workers are kept for the next one (a model's trial
// gets a fresh worker, which makes the model).
WireMessage runSandboxed(const WireMessage& job, const std::string& adapter_path, bool kept) {
  const ExecutionLimit limit = currentExecutionLimit();
  const double seconds = limit.seconds > 0 ? limit.seconds : defaultExecutionSeconds();
  WireMessage sent = job;
  sent.header["seconds"] = seconds;
  const double waited = seconds + defaultExecutionSeconds();
  JobOutcome outcome;
  if (kept) {
    WorkerPool::Lease lease =
        WorkerPool::jobWorkers().acquire("sandbox", 0, "sandbox", limit.cancelled);
    outcome = lease.worker().run(sent, waited, limit.cancelled);
  } else {
    outcome = runInFreshWorker("sandbox", sent, waited, limit.cancelled);
  }
  const std::string what =
      adapter_path + (outcome.progress.phase.empty() ? "" : ": " + outcome.progress.phase);
  const bool out_of_time =
      outcome.kind == JobOutcome::Kind::kTimedOut ||
      (outcome.kind == JobOutcome::Kind::kCrashed && outcome.signal == SIGALRM);
  if (out_of_time) {
    throw UserError(what + " did not finish within " + std::to_string(static_cast<int>(seconds)) +
                    " s and was stopped (a loop that never ends?)");
  }
  switch (outcome.kind) {
    case JobOutcome::Kind::kCompleted:
      return outcome.result;
    case JobOutcome::Kind::kCancelled:
      throw Cancelled();
    case JobOutcome::Kind::kCrashed:
      throw UserError(what + "'s process " +
                      (outcome.signal != 0
                           ? std::string("died of ") + ::strsignal(outcome.signal)
                           : "exited with status " + std::to_string(outcome.exit_status)) +
                      (outcome.signal == SIGXCPU ? " (it used more CPU time than it may)" : "") +
                      (outcome.stderr_tail.empty() ? "" : ": " + firstLine(outcome.stderr_tail)));
    default:
      // The job threw: its message is already the sentence a person reads.
      throw UserError(outcome.message);
  }
}

// ---- In the sandbox worker ----

WireMessage conditionJob(const WireMessage& job, JobContext& context) {
  AdapterCodeRunsHere here;
  const AdapterFile adapter = adapterFromJson(job.header.at("adapter"));
  const CompiledRewrite rewrite = compileRewrite(adapter);
  if (rewrite.condition == nullptr) throw UserError(adapter.path + ": has no condition");
  if (job.blobs.empty()) throw std::runtime_error("a condition job without arguments");
  const auto arguments = unpickledArguments(job.blobs[0]);
  const SandboxScope sandbox({context.seconds, kAdapterCodeMemoryBytes});
  denySystemCallsForAdapterCode();  // for good: this worker serves conditions only
  setWorkerPhase("condition");
  json verdicts = json::array();
  for (const ConditionVerdict& verdict : runAll(*rewrite.condition, arguments)) {
    verdicts.push_back({static_cast<int>(verdict.kind), verdict.message});
  }
  return {{{"verdicts", verdicts}}, {}};
}

WireMessage trialJob(const WireMessage& job, JobContext& context) {
  AdapterCodeRunsHere here;
  setWorkerPhase("making the model to try it on");
  const std::shared_ptr<const LoadedModel> model =
      modelFromRecipe(ModelRecipe::fromJson(job.header.at("recipe")));
  const DeviceProfile profile = loadProfile(job.header.at("profile").get<std::string>());
  const AdapterFile adapter = adapterFromJson(job.header.at("adapter"));
  const SandboxScope sandbox({context.seconds, kAdapterCodeMemoryBytes + weightBytes(*model)});
  denySystemCallsForAdapterCode();
  const AdapterApplication application =
      applyAdapter(adapter, model, profile, /*check_equivalence=*/false);
  return {{{"changed", application.changed()}}, {}};
}

}  // namespace

bool adapterCodeRunsHere() {
  return code_runs_here > 0;
}

AdapterCodeRunsHere::AdapterCodeRunsHere() {
  ++code_runs_here;
}
AdapterCodeRunsHere::~AdapterCodeRunsHere() {
  --code_runs_here;
}

std::vector<ConditionVerdict> runCondition(
    const AdapterFile& adapter, torch::jit::Function& condition,
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments) {
  bool any = false;
  for (const auto& stack : arguments) any = any || stack.has_value();
  if (!any) return std::vector<ConditionVerdict>(arguments.size());
  if (adapterCodeRunsHere()) {
    setWorkerPhase("condition");
    return runAll(condition, arguments);
  }
  WireMessage job{{{"kind", "adapter_condition"}, {"adapter", adapterToJson(adapter)}},
                  {pickledArguments(arguments)}};
  const WireMessage answer = runSandboxed(job, adapter.path, /*kept=*/true);
  std::vector<ConditionVerdict> verdicts;
  for (const auto& entry : answer.header.at("verdicts")) {
    verdicts.push_back({static_cast<ConditionVerdict::Kind>(entry.at(0).get<int>()),
                        entry.at(1).get<std::string>()});
  }
  if (verdicts.size() != arguments.size()) {
    throw UserError(adapter.path + ": condition: its sandbox answered for " +
                    std::to_string(verdicts.size()) + " of " + std::to_string(arguments.size()) +
                    " matches");
  }
  return verdicts;
}

void trialInSandbox(const AdapterFile& adapter, const LoadedModel& model,
                    const DeviceProfile& profile) {
  if (profile.path.empty()) {
    throw UserError(adapter.path + ": a draft is tried on a profile read from a file, and " +
                    profile.name + " has none");
  }
  WireMessage job{{{"kind", "adapter_trial"},
                   {"recipe", model.recipe.toJson()},
                   {"profile", profile.path},
                   {"adapter", adapterToJson(adapter)}},
                  {}};
  runSandboxed(job, adapter.path, /*kept=*/false);
}

void registerSandboxJobs() {
  registerJob("adapter_condition", conditionJob);
  registerJob("adapter_trial", trialJob);
}

}  // namespace stickler
