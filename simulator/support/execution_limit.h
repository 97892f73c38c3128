// How long user code may run inside the server's own process, and the flag that stops it.
//
// A model's forward and an adapter's replacement run in this process when a model is loaded
// (the example run that records shapes), adapted, checked for equivalence or used as the
// reference; device runs go to workers with their own timeout. Whoever starts an operation
// sets the limit for its thread (runOperation does, from the call's timeout_seconds and
// cancellation flag); the interpreter checks it between operators and at every loop trip, so a
// forward that never ends becomes an error and a cancelled call stops, while the server goes on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "simulator/support/errors.h"

namespace stickler {

// The default of timeout_seconds, and the budget of an operation without that field unless
// STICKLER_TIMEOUT_SECONDS says otherwise (defaultExecutionSeconds).
constexpr int kDefaultExecutionSeconds = 300;

// STICKLER_TIMEOUT_SECONDS when it is a positive number, else kDefaultExecutionSeconds: the
// budget of operations whose input has no timeout_seconds (inspect_model, check_support, ...),
// for a model whose example run takes longer (an 8B model on a long example input).
double defaultExecutionSeconds();

struct ExecutionLimit {
  double seconds = 0.0;  // one run's wall-clock budget; 0 for none
  const std::atomic<bool>* cancelled = nullptr;
};

// A run that went past its limit. A UserError: the code the user brought does not finish.
class ExecutionTimedOut : public UserError {
 public:
  explicit ExecutionTimedOut(double seconds);
};

// Sets this thread's limit until the scope ends (then the previous one is back). Threads that
// an operation starts take its limit along: ExecutionLimitScope scope(currentExecutionLimit())
// captured before the thread starts.
class ExecutionLimitScope {
 public:
  explicit ExecutionLimitScope(ExecutionLimit limit);
  ~ExecutionLimitScope();
  ExecutionLimitScope(const ExecutionLimitScope&) = delete;
  ExecutionLimitScope& operator=(const ExecutionLimitScope&) = delete;

 private:
  ExecutionLimit previous_;
};

ExecutionLimit currentExecutionLimit();

// One run's clock under this thread's limit, started when it is made. tick() is cheap enough to
// call for every operator: it looks at the clock and the flag every 64 ticks, and throws
// Cancelled or ExecutionTimedOut.
class ExecutionClock {
 public:
  ExecutionClock();
  void tick() {
    if (++ticks_ % 64 == 0 && (limited_ || limit_.cancelled != nullptr)) check();
  }

 private:
  void check() const;
  ExecutionLimit limit_;
  bool limited_ = false;
  std::chrono::steady_clock::time_point deadline_;
  uint64_t ticks_ = 0;
};

}  // namespace stickler
