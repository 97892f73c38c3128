// The main of the test binaries that start workers: a worker is the binary that starts it,
// in worker mode, so these binaries serve Stickler's jobs (and the tests' own) too.
#include <gtest/gtest.h>

#include "simulator/interpreter/tensor_memory.h"
#include "simulator/support/blas_threads.h"
#include "simulator/workers/worker_main.h"
#include "tools/framework/worker_jobs.h"

int main(int argc, char** argv) {
  // As the stickler binary does, in the tests and their workers.
  stickler::setUpTensorMemory();
  stickler::limitBlasThreads();
  stickler::registerWorkerJobs();
  if (const auto status = stickler::runWorkerIfAsked(argc, argv)) return *status;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
