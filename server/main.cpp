#include <string>
#include <vector>

#include "server/blas_threads.h"
#include "server/command_line.h"

int main(int argc, char** argv) {
  stickler::limitBlasThreads();
  std::vector<std::string> arguments(argv + 1, argv + argc);
  return stickler::runCommandLine(arguments);
}
