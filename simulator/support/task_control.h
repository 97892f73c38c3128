#pragma once

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>

namespace stickler {

// Thrown when the caller cancelled an operation; front-ends report it as such, not as an error.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// What a long operation receives from whoever started it: where to report progress, and a
// flag that says the caller gave up (checked between phases, and by device workers, which are
// killed when it is set).
struct TaskControl {
  std::function<void(double done, double total, const std::string& message)> on_progress;
  const std::atomic<bool>* cancelled = nullptr;

  void progress(double done, double total, const std::string& message) const {
    if (on_progress) on_progress(done, total, message);
  }
  bool isCancelled() const { return cancelled != nullptr && cancelled->load(); }
  void checkCancelled() const {
    if (isCancelled()) throw Cancelled();
  }
};

}  // namespace stickler
