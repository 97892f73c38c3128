#include "simulator/support/execution_limit.h"

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

ExecutionTimedOut::ExecutionTimedOut(double limit)
    : UserError("it ran for more than " + seconds(limit) +
                " s in the server's process and was stopped (timeout_seconds sets the limit; "
                "a forward or replacement that loops forever never finishes)") {}

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
