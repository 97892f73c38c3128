// Which model a result is about, as reports name it: the archive path, its SHA-256 (of the
// adapted graph's identity for an adapted model) and the card's name.
#pragma once

#include <string>

namespace stickler {

struct ModelIdentity {
  std::string path;
  std::string sha256;
  std::string name;
};

}  // namespace stickler
