// STICKLER_CACHE_DIR pointed at a directory of the test's own while it lives (removed before and
// after), and given back as it was. LibTorch-free.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace stickler::testing {

class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::remove_all(dir_);
    if (const char* was = std::getenv("STICKLER_CACHE_DIR")) before_ = was;
    ::setenv("STICKLER_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (before_) {
      ::setenv("STICKLER_CACHE_DIR", before_->c_str(), 1);
    } else {
      ::unsetenv("STICKLER_CACHE_DIR");
    }
    std::filesystem::remove_all(dir_);
  }
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::optional<std::string> before_;
};

}  // namespace stickler::testing
