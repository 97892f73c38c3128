#include "simulator/support/blas_threads.h"

#include <dlfcn.h>

#include <cstdlib>

namespace stickler {

void limitBlasThreads() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || std::getenv("OMP_NUM_THREADS") != nullptr)
    return;
  // Looked up at run time: LibTorch may use another BLAS, and then there is nothing to do.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(1);
}

void stopBlasThreads() {
  using Shutdown = int (*)();
  if (auto shutdown = reinterpret_cast<Shutdown>(::dlsym(RTLD_DEFAULT, "blas_thread_shutdown_")))
    shutdown();
}

}  // namespace stickler
