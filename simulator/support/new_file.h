// A new file written whole under the first free name in a directory: a reader never sees half of
// it, and no file already there is replaced. The report store keeps every report this way.
#pragma once

#include <functional>
#include <string>

namespace stickler {

// The name to try on the `attempt`-th try (1, 2, ...): "x.json", then "x-2.json", ...
using NameForAttempt = std::function<std::string(int attempt)>;

// Writes `text` as a new file in `directory` (which must exist) under the first name of
// `name_for(1) .. name_for(attempts)` not taken, and returns that name. Throws UserError naming
// the directory when it cannot be written or every name is taken.
//
// The file is written unnamed (O_TMPFILE) and given its name by link(2), which fails rather than
// replace a file. Its inode comes from a spare made ahead of need on a background thread: making
// one is most of a save on ext4 (0.1-0.5 ms, against 10 us for the link), and localize saves a
// report on every call. A spare that is never used disappears with the process.
std::string writeNewFile(const std::string& directory, const std::string& text,
                         const NameForAttempt& name_for, int attempts);

// The same through a named temporary file, linked into place and removed: for a file system
// without O_TMPFILE or without /proc (writeNewFile falls back to it), and for its tests.
std::string writeNewFileThroughTemporary(const std::string& directory, const std::string& text,
                                         const NameForAttempt& name_for, int attempts);

}  // namespace stickler
