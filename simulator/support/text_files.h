// Whole files as text: read at once, and written so that a reader never sees half a file.
#pragma once

#include <optional>
#include <string>

namespace stickler {

// The file's bytes; nullopt when it cannot be opened (missing, or not readable), "" when it is
// empty.
std::optional<std::string> readTextFileIfPresent(const std::string& path);

// The file's bytes; "" when it cannot be read, for callers to whom a missing file and an empty
// one are the same.
std::string readTextFile(const std::string& path);

// Writes `text` to a temporary file beside `path`, then renames it into place. Throws UserError
// naming the path when it cannot.
void writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace stickler
