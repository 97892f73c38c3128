// An environment variable set while the object lives, and given back as it was. LibTorch-free.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace stickler::testing {

class ScopedEnvironment {
 public:
  ScopedEnvironment(std::string variable, const std::string& value)
      : variable_(std::move(variable)) {
    if (const char* was = std::getenv(variable_.c_str())) before_ = was;
    ::setenv(variable_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (before_) {
      ::setenv(variable_.c_str(), before_->c_str(), 1);
    } else {
      ::unsetenv(variable_.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::string variable_;
  std::optional<std::string> before_;
};

}  // namespace stickler::testing
