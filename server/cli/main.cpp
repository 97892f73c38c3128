#include <string>
#include <vector>

#include "server/cli/command_line.h"
#include "simulator/interpreter/tensor_memory.h"
#include "simulator/support/blas_threads.h"
#include "simulator/workers/worker_main.h"
#include "tools/framework/worker_jobs.h"

int main(int argc, char** argv) {
  stickler::setUpTensorMemory();
  stickler::limitBlasThreads();
  stickler::registerWorkerJobs();
  // Started again as one of its own workers (a model host, a sandbox): serve jobs, nothing else.
  if (const auto status = stickler::runWorkerIfAsked(argc, argv)) return *status;
  std::vector<std::string> arguments(argv + 1, argv + argc);
  return stickler::runCommandLine(arguments);
}
