// Where Stickler's shipped resources live (device profiles, the adapter catalog, knowledge pages,
// skills, docs), so that one binary works from a build tree, from an install prefix anywhere,
// and from a .deb.
#pragma once

#include <string>

namespace stickler {

// In order: $<env_var> when set and not empty; <dir of the executable>/../share/stickler/<name>
// when it exists (an installed tool: <prefix>/bin/stickler); else `build_tree_dir`, the
// directory in the source tree this binary was built from.
std::string resourceDir(const char* env_var, const char* name, const char* build_tree_dir);

// The same, required: a UserError naming the directory and the variable that overrides it when
// it is not a directory (a broken install is a clear error, not an empty answer).
std::string requireResourceDir(const char* env_var, const char* name, const char* build_tree_dir,
                               const char* what);

// Where Stickler keeps a cache of `kind` (golden thresholds, archive hashes): under
// $STICKLER_CACHE_DIR, else $XDG_CACHE_HOME/stickler, else ~/.cache/stickler. Not created.
std::string cacheDir(const char* kind);

}  // namespace stickler
