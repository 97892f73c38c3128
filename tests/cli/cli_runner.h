#pragma once

#include <string>
#include <vector>

namespace stickler::testing {

// What running the `stickler` binary printed and how it exited.
struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result stickler(const std::vector<std::string>& args);

}  // namespace stickler::testing
