#pragma once

#include <stdexcept>
#include <string>

namespace stickler {

// An error caused by what the user gave us: a path, a flag, the content of a file.
// Front-ends report what() as one line: the CLI exits with status 2, MCP returns an
// isError tool result. Messages name the file or field and the problem.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace stickler
