// STICKLER_CACHE_DIR pointed at a directory of the test's own while it lives (removed before and
// after), and given back as it was. LibTorch-free.
#pragma once

#include <filesystem>
#include <string>

#include "tests/unit/scoped_environment.h"

namespace stickler::testing {

class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(std::string dir)
      : dir_(removed(std::move(dir))), variable_("STICKLER_CACHE_DIR", dir_) {}
  ~ScopedCacheDir() { std::filesystem::remove_all(dir_); }
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  static std::string removed(std::string dir) {
    std::filesystem::remove_all(dir);
    return dir;
  }
  std::string dir_;
  ScopedEnvironment variable_;
};

}  // namespace stickler::testing
