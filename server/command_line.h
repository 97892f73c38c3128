#pragma once

#include <string>
#include <vector>

namespace stickler {

// Exit statuses of the `stickler` command.
enum ExitStatus : int {
  kExitOk = 0,
  kExitBadInput = 2,   // a bad flag, path, archive, card or input: one line on stderr
  kExitInternal = 70,  // a bug in Stickler (EX_SOFTWARE)
};

// Runs the command line: one subcommand per entry of the operation table, with flags derived
// from the operation's input schema; `--json` prints the operation's output as JSON.
int runCommandLine(const std::vector<std::string>& arguments);

}  // namespace stickler
