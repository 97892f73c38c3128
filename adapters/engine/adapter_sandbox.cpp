#include "adapters/engine/adapter_sandbox.h"
#include "simulator/support/text_format.h"

#include <csignal>
#include <cstring>

#include <nlohmann/json.hpp>

#include "simulator/backends/worker.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/task_control.h"

namespace stickler {
namespace {

// TorchScript's interpreter reports "The following operation failed in the TorchScript
// interpreter.", a traceback, and the error itself last: say the error.
std::string conciseError(const std::string& what) {
  if (what.rfind("The following operation failed", 0) != 0) return firstLine(what);
  size_t end = what.find_last_not_of("\n ");
  if (end == std::string::npos) return firstLine(what);
  const size_t start = what.rfind('\n', end);
  return what.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

// Verdicts travel from the worker as JSON: [[kind, message], ...].
std::string runAll(torch::jit::Function& condition,
                   const std::vector<std::optional<std::vector<c10::IValue>>>& arguments) {
  nlohmann::json verdicts = nlohmann::json::array();
  for (const auto& stack : arguments) {
    if (!stack) {
      verdicts.push_back({static_cast<int>(ConditionVerdict::Kind::kTurnedDown), ""});
      continue;
    }
    try {
      const bool holds = condition(*stack).toBool();
      verdicts.push_back({static_cast<int>(holds ? ConditionVerdict::Kind::kHolds
                                                 : ConditionVerdict::Kind::kTurnedDown),
                          ""});
    } catch (const std::exception& e) {
      verdicts.push_back(
          {static_cast<int>(ConditionVerdict::Kind::kFailed), conciseError(e.what())});
    }
  }
  return verdicts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// What a worker running adapter code ended with, unless it completed: an error that says why,
// about `what` ("cube.py: condition").
void throwUnlessCompleted(const WorkerOutcome& outcome, const std::string& what, double seconds) {
  switch (outcome.status) {
    case WorkerOutcome::Status::kCompleted:
      return;
    case WorkerOutcome::Status::kCancelled:
      throw Cancelled();
    case WorkerOutcome::Status::kTimedOut:
      throw UserError(what + " did not finish within " + std::to_string(static_cast<int>(seconds)) +
                      " s and was stopped (a loop that never ends?)");
    case WorkerOutcome::Status::kAborted:
      throw UserError(what + "'s process died of " + ::strsignal(outcome.signal) +
                      (outcome.signal == SIGXCPU ? " (it used more CPU time than it may)" : "") +
                      (outcome.stderr_text.empty() ? "" : ": " + firstLine(outcome.stderr_text)));
    case WorkerOutcome::Status::kFailed:
      throw UserError(what + " failed: " + conciseError(outcome.message));
  }
}

}  // namespace

std::vector<ConditionVerdict> runConditionSandboxed(
    torch::jit::Function& condition,
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments,
    const std::string& adapter_path) {
  bool any = false;
  for (const auto& stack : arguments) any = any || stack.has_value();
  if (!any) return std::vector<ConditionVerdict>(arguments.size());

  const ExecutionLimit limit = currentExecutionLimit();
  const double seconds = limit.seconds > 0 ? limit.seconds : defaultExecutionSeconds();
  const WorkerOutcome outcome =
      runInWorker([&](WorkerProgress&) { return runAll(condition, arguments); }, seconds,
                  limit.cancelled, {seconds, kAdapterCodeMemoryBytes});
  throwUnlessCompleted(outcome, adapter_path + ": condition", seconds);
  std::vector<ConditionVerdict> verdicts;
  for (const auto& entry : nlohmann::json::parse(outcome.payload)) {
    verdicts.push_back({static_cast<ConditionVerdict::Kind>(entry.at(0).get<int>()),
                        entry.at(1).get<std::string>()});
  }
  return verdicts;
}

std::string runAdapterCodeSandboxed(const std::function<std::string()>& job,
                                    const std::string& what, uint64_t extra_bytes) {
  const ExecutionLimit limit = currentExecutionLimit();
  const double seconds = limit.seconds > 0 ? limit.seconds : defaultExecutionSeconds();
  const WorkerOutcome outcome =
      runInWorker([&](WorkerProgress&) { return job(); }, seconds, limit.cancelled,
                  {seconds, kAdapterCodeMemoryBytes + extra_bytes});
  throwUnlessCompleted(outcome, what, seconds);
  return outcome.payload;
}

void runAdaptedModelSandboxed(const LoadedModel& model, torch::jit::Graph& adapted,
                              const std::string& adapter_path) {
  const ExecutionLimit limit = currentExecutionLimit();
  const double seconds = limit.seconds > 0 ? limit.seconds : defaultExecutionSeconds();
  uint64_t weight_bytes = 0;
  for (const at::Tensor& parameter : model.module.parameters()) weight_bytes += parameter.nbytes();
  for (const at::Tensor& buffer : model.module.buffers()) weight_bytes += buffer.nbytes();
  const WorkerOutcome outcome = runInWorker(
      [&](WorkerProgress&) {
        rebuildModel(model, model.module, adapted.copy(), "sandboxed");
        return std::string();
      },
      seconds, limit.cancelled, {seconds, kAdapterCodeMemoryBytes + weight_bytes});
  throwUnlessCompleted(outcome, adapter_path + ": the adapted model", seconds);
}

}  // namespace stickler
