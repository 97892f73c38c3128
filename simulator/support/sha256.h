#pragma once

#include <string>
#include <string_view>

namespace stickler {

// Lowercase hex SHA-256 of a file's bytes; throws UserError when it cannot be read.
std::string sha256File(const std::string& path);

// Lowercase hex SHA-256 of a byte string.
std::string sha256Bytes(std::string_view bytes);

}  // namespace stickler
