#pragma once

#include <string>
#include <vector>

namespace stickler {

// Runs the command line: one subcommand per entry of the operation table, with flags derived
// from the operation's input schema; `--json` prints the operation's output as JSON.
int runCommandLine(const std::vector<std::string>& arguments);

}  // namespace stickler
