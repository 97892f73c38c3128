#include "server/mcp/workspace.h"

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

bool realPath(const std::string& path, std::string& out) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return false;
  out = buffer;
  return true;
}

bool within(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

}  // namespace

Workspace::Workspace(const std::vector<std::string>& roots) {
  for (const auto& root : roots) {
    std::string canonical;
    if (!realPath(root, canonical) || !fs::is_directory(canonical)) {
      throw UserError("workspace root '" + root + "' is not a directory");
    }
    roots_.push_back(canonical);
  }
  if (roots_.empty()) throw UserError("the workspace needs at least one root");
}

std::string Workspace::resolve(const std::string& path) const {
  if (path.empty()) throw UserError("an empty path");
  if (path.find('\0') != std::string::npos) throw UserError("a path with a NUL byte");
  const fs::path given(path);
  fs::path absolute = given.is_absolute() ? given : fs::path(roots_.front()) / given;
  if (!given.is_absolute()) {
    for (const auto& root : roots_) {
      std::error_code ec;
      if (fs::exists(fs::path(root) / given, ec)) {
        absolute = fs::path(root) / given;
        break;
      }
    }
  }
  std::string resolved;
  if (!realPath(absolute.string(), resolved)) {
    // Not there (yet). A dangling symbolic link is where a write would land: follow it (as
    // open() would) to the file it names, then resolve that file's parent, so that neither a
    // link nor a symlinked parent can lead outside.
    fs::path target = absolute;
    std::error_code ec;
    for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
      if (hops == 40) throw UserError("path '" + path + "': too many levels of symbolic links");
      const fs::path link = fs::read_symlink(target, ec);
      target = link.is_absolute() ? link : target.parent_path() / link;
    }
    std::string parent;
    if (!realPath(target.parent_path().string(), parent)) {
      throw UserError("path '" + path + "': no such file or directory");
    }
    resolved = (fs::path(parent) / target.filename()).string();
  }
  for (const auto& root : roots_) {
    if (within(resolved, root)) return resolved;
  }
  std::string roots;
  for (const auto& root : roots_) roots += (roots.empty() ? "" : ", ") + root;
  throw UserError("path '" + path + "' " +
                  (resolved == absolute.lexically_normal().string()
                       ? "is"
                       : "resolves to '" + resolved + "', which is") +
                  " outside the workspace (roots: " + roots + ")");
}

std::string Workspace::resolveCreating(const std::string& path) const {
  if (path.empty()) throw UserError("an empty path");
  if (path.find('\0') != std::string::npos) throw UserError("a path with a NUL byte");
  const fs::path given(path);
  std::error_code ec;
  if (given.is_absolute() ? fs::exists(given.parent_path(), ec) : [&] {
        for (const auto& root : roots_) {
          if (fs::exists((fs::path(root) / given).parent_path(), ec)) return true;
        }
        return false;
      }()) {
    return resolve(path);
  }
  // A relative path that exists nowhere yet is made under the first root, as resolve says.
  fs::path parent = (given.is_absolute() ? given : fs::path(roots_.front()) / given).parent_path();
  for (const auto& part : given) {
    if (part == "..") {
      throw UserError("path '" + path +
                      "': a folder that does not exist yet cannot be reached "
                      "through '..'; name it plainly");
    }
  }
  // The nearest folder that exists, resolved and confined like any path; the rest is made
  // under it.
  fs::path missing;
  while (!fs::exists(parent, ec)) {
    missing = parent.filename() / missing;
    parent = parent.parent_path();
  }
  const fs::path base(resolve(parent.string()));
  const fs::path folders = base / missing;
  fs::create_directories(folders, ec);
  if (ec) throw UserError("cannot create " + folders.string() + ": " + ec.message());
  return resolve((folders / given.filename()).string());
}

}  // namespace stickler
