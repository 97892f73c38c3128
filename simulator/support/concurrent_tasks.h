// Independent pieces of work run side by side on the machine's cores: the equivalence check's
// float32 and float64 runs of a model before and after an adaptation do not depend on each
// other.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace stickler {

// The threads to use: STICKLER_THREADS when set (at least 1), else the hardware's.
size_t concurrencyLimit();

// Runs each task once on up to `workers` threads (the caller's among them), taking them in the
// order given; returns when all are done, then rethrows the first exception a task threw.
void runConcurrently(const std::vector<std::function<void()>>& tasks,
                     size_t workers = concurrencyLimit());

}  // namespace stickler
