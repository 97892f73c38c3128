// Adapter code runs where it cannot hurt the server: in a sandbox worker, a fresh process (never a
// fork of this one) under the call's time limit and cancellation, with kernel limits on CPU time
// and memory (docs/security.md). A reviewed adapter's condition runs there each time it is
// applied. A draft, which no one reviewed, is first applied there whole (its trial: conditions,
// the replacement's folded values, the adapted model's first run); once that finished within its
// limits, the same deterministic computation runs here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/script.h>

#include "adapters/engine/adapter_file.h"

namespace stickler {

struct LoadedModel;
struct DeviceProfile;

struct ConditionVerdict {
  enum class Kind { kHolds, kTurnedDown, kFailed };
  Kind kind = Kind::kTurnedDown;
  std::string message;  // kFailed: what the condition threw, first line
};

// How much memory adapter code may map beyond what its sandbox holds when the code starts (and,
// for a draft's trial, beyond the model's weights, which a replacement may rightly copy: a padded
// weight).
constexpr uint64_t kAdapterCodeMemoryBytes = 4ULL << 30;

// Whether adapter code runs on this thread without a sandbox: in a sandbox worker (where all of
// it does), while a model is made again from its recipe (its caller ran that code already), and
// while a draft whose trial completed is applied.
bool adapterCodeRunsHere();
class AdapterCodeRunsHere {
 public:
  AdapterCodeRunsHere();
  ~AdapterCodeRunsHere();
  AdapterCodeRunsHere(const AdapterCodeRunsHere&) = delete;
  AdapterCodeRunsHere& operator=(const AdapterCodeRunsHere&) = delete;
};

// `condition` (compiled from `adapter`) on each argument list (nullopt: nothing is known about a
// matched value, which turns the match down without running anything): here when adapter code
// runs here, else all in one sandbox worker. A condition that runs out of time, is cancelled or
// kills its worker is an error for the whole adapter: UserError naming the adapter, or Cancelled.
std::vector<ConditionVerdict> runCondition(
    const AdapterFile& adapter, torch::jit::Function& condition,
    const std::vector<std::optional<std::vector<c10::IValue>>>& arguments);

// A draft's trial: `adapter` applied to `model` (made again from its recipe) for `profile` in a
// sandbox worker, without the equivalence check. Throws what applying it there threw (a
// UserError naming the adapter file), a UserError when it ran out of time or memory or killed
// its worker, or Cancelled.
void trialInSandbox(const AdapterFile& adapter, const LoadedModel& model,
                    const DeviceProfile& profile);

}  // namespace stickler
