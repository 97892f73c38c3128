#include "tests/cli/cli_runner.h"
#include "tests/build_paths.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace stickler::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

Result stickler(const std::vector<std::string>& args) {
  return sticklerIn("", args);
}

Result sticklerIn(const std::string& cwd, const std::vector<std::string>& args,
                  const std::vector<std::string>& environment) {
  // ctest runs tests in parallel processes: each needs its own files.
  static int calls = 0;
  const std::string stem = ::testing::TempDir() + "/stickler_cli_" + std::to_string(::getpid()) +
                           "_" + std::to_string(calls++);
  const std::string out = stem + ".out";
  const std::string err = stem + ".err";
  std::string command = cwd.empty() ? "" : "cd " + quote(cwd) + " && ";
  if (!environment.empty()) command += "env ";
  for (const auto& variable : environment) command += quote(variable) + " ";
  command += kSticklerBinary;
  for (const auto& arg : args) command += " " + quote(arg);
  command += " >" + out + " 2>" + err;
  const int raw = std::system(command.c_str());
  Result result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = slurp(out);
  result.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return result;
}

}  // namespace stickler::testing
