// Adapter code run where it cannot hurt the server: in a worker process, under the thread's
// execution limit (time, cancellation) and kernel limits on CPU time and memory. Conditions
// always run there; a replacement no one has reviewed runs there first (docs/security.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

struct LoadedModel;

struct ConditionVerdict {
  enum class Kind { kHolds, kTurnedDown, kFailed };
  Kind kind = Kind::kTurnedDown;
  std::string message;  // kFailed: what the condition threw, first line
};

// How much memory adapter code may map beyond what its worker inherits from the server (and,
// for an adapted model's run, beyond the size of the model's weights, which a replacement may
// rightly copy: a padded weight).
constexpr uint64_t kAdapterCodeMemoryBytes = 4ULL << 30;

// The condition's verdict on each argument list (nullopt: nothing is known about a matched
// value, which turns the match down without running anything), all in one worker. A condition
// that runs out of time, is cancelled or kills its worker is an error for the whole adapter:
// UserError naming `adapter_path`, or Cancelled.
std::vector<ConditionVerdict> runConditionSandboxed(
    torch::jit::Function& condition,
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments,
    const std::string& adapter_path);

// Runs `job` (adapter code) in a worker under the current execution limit and the sandbox's
// memory limit plus `extra_bytes`, and returns what it returned. Throws UserError "<what> did
// not finish within N s" (or died, or failed: what it threw), or Cancelled.
std::string runAdapterCodeSandboxed(const std::function<std::string()>& job,
                                    const std::string& what, uint64_t extra_bytes = 0);

// Runs the adapted model (`adapted`, `model`'s graph after an adapter's rewrite) on its example
// inputs in a worker, as rebuildModel would in this process. Throws UserError naming
// `adapter_path` when it fails, runs out of time or memory, or kills its worker; Cancelled.
void runAdaptedModelSandboxed(const LoadedModel& model, torch::jit::Graph& adapted,
                              const std::string& adapter_path);

}  // namespace stickler
