// An adapter's condition run where it cannot hurt the server: in a worker process, under the
// thread's execution limit (time, cancellation) and kernel limits on CPU time and memory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

struct ConditionVerdict {
  enum class Kind { kHolds, kTurnedDown, kFailed };
  Kind kind = Kind::kTurnedDown;
  std::string message;  // kFailed: what the condition threw, first line
};

// How much memory a condition may map beyond what its worker inherits from the server.
constexpr uint64_t kConditionMemoryBytes = 4ULL << 30;

// The condition's verdict on each argument list (nullopt: nothing is known about a matched
// value, which turns the match down without running anything), all in one worker. A condition
// that runs out of time, is cancelled or kills its worker is an error for the whole adapter:
// UserError naming `adapter_path`, or Cancelled.
std::vector<ConditionVerdict> runConditionSandboxed(
    torch::jit::Function& condition,
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments,
    const std::string& adapter_path);

}  // namespace stickler
