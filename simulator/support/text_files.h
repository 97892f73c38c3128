// Whole files as text: read at once, and written so that a reader never sees half a file.
#pragma once

#include <string>

namespace stickler {

// The file's bytes; "" when it cannot be read (callers that must tell check existence first).
std::string readTextFile(const std::string& path);

// Writes `text` to a temporary file beside `path`, then renames it into place. Throws UserError
// naming the path when it cannot.
void writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace stickler
