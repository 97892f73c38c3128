#include "simulator/support/resource_dirs.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "simulator/support/errors.h"

namespace stickler {
namespace fs = std::filesystem;

namespace {

// <prefix>/share/stickler for an executable at <prefix>/bin/<name>; "" when unknown.
fs::path installedShareDir() {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return executable.parent_path().parent_path() / "share" / "stickler";
}

}  // namespace

std::string resourceDir(const char* env_var, const char* name, const char* build_tree_dir) {
  if (const char* dir = std::getenv(env_var); dir != nullptr && *dir != '\0') return dir;
  static const fs::path share = installedShareDir();
  std::error_code error;
  if (!share.empty() && fs::is_directory(share / name, error)) return (share / name).string();
  return build_tree_dir;
}

std::string requireResourceDir(const char* env_var, const char* name, const char* build_tree_dir,
                               const char* what) {
  const std::string dir = resourceDir(env_var, name, build_tree_dir);
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw UserError(std::string("the ") + what + " directory " + dir +
                    " does not exist: reinstall Stickler, or set " + env_var +
                    " to the directory that holds them");
  }
  return dir;
}

std::string cacheDir(const char* kind) {
  if (const char* dir = std::getenv("STICKLER_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return (fs::path(dir) / kind).string();
  }
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir != nullptr && *dir != '\0') {
    return (fs::path(dir) / "stickler" / kind).string();
  }
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr && *home != '\0' ? home : "/tmp") / ".cache" / "stickler" / kind)
      .string();
}

}  // namespace stickler
