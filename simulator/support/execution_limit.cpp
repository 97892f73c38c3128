#include "simulator/support/execution_limit.h"

#include <cstdlib>
#include <string>

#include "simulator/support/task_control.h"

namespace stickler {
namespace {

thread_local ExecutionLimit current_limit;

std::string seconds(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

double defaultExecutionSeconds() {
  if (const char* text = std::getenv("STICKLER_TIMEOUT_SECONDS"); text != nullptr) {
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != text && *end == '\0' && value > 0) return value;
  }
  return kDefaultExecutionSeconds;
}

ExecutionTimedOut::ExecutionTimedOut(double limit)
    : UserError("it ran for more than " + seconds(limit) +
                " s and was stopped: model and adapter code run in Stickler's own process "
                "for at most the call's timeout_seconds, or STICKLER_TIMEOUT_SECONDS for calls "
                "without one (a forward or replacement that loops forever never finishes)") {}

ExecutionLimitScope::ExecutionLimitScope(ExecutionLimit limit) : previous_(current_limit) {
  current_limit = limit;
}

ExecutionLimitScope::~ExecutionLimitScope() {
  current_limit = previous_;
}

ExecutionLimit currentExecutionLimit() {
  return current_limit;
}

ExecutionClock::ExecutionClock() : limit_(current_limit), limited_(limit_.seconds > 0) {
  if (limited_) {
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(limit_.seconds));
  }
}

void ExecutionClock::check() const {
  if (limit_.cancelled != nullptr && limit_.cancelled->load()) throw Cancelled();
  if (limited_ && std::chrono::steady_clock::now() > deadline_) {
    throw ExecutionTimedOut(limit_.seconds);
  }
}

}  // namespace stickler
