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

// The same, run in directory `cwd` (a workspace: sweeps keep their history there) with
// `environment` ("NAME=value" pairs) added.
Result sticklerIn(const std::string& cwd, const std::vector<std::string>& args,
                  const std::vector<std::string>& environment = {});

}  // namespace stickler::testing
