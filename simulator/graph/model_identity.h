// Which model a result is about, as reports name it: the archive path, its SHA-256 (of the
// adapted graph's identity for an adapted model) and the card's name.
#pragma once

#include <string>
#include <vector>

namespace stickler {

struct ModelIdentity {
  std::string path;
  std::string sha256;
  std::string name;
  // The adapters the model was computed with, in the order applied (empty: the archive as it
  // is): every result that names the model says which stack it describes.
  std::vector<std::string> adapters;
};

}  // namespace stickler
