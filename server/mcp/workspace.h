#pragma once

#include <string>
#include <vector>

namespace stickler {

// The directories the server may read and write: paths a client names are resolved (symlinks
// followed, with realpath) and must lie inside one of them, like the official filesystem
// server's confinement.
class Workspace {
 public:
  // Each root must exist; it is kept in canonical form. Throws UserError otherwise.
  explicit Workspace(const std::vector<std::string>& roots);

  // The canonical path for `path`. A relative path is taken under the first root where it
  // exists (under the first root when it exists nowhere yet); a path that does not exist yet is
  // resolved through its parent directory. Throws UserError when the
  // result lies outside every root, naming where it leads.
  std::string resolve(const std::string& path) const;

  // As resolve, for a file about to be written: folders missing on the way are created, once
  // the nearest existing one is found inside a root. A missing folder is never reached through
  // "..": the path must name it plainly.
  std::string resolveCreating(const std::string& path) const;

  const std::vector<std::string>& roots() const { return roots_; }

 private:
  std::vector<std::string> roots_;
};

}  // namespace stickler
