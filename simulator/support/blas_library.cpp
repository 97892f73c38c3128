#include "simulator/support/blas_library.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>

namespace stickler {

std::string blasLibraryPath() {
  // Looked up as the dynamic linker resolves it for LibTorch: the first library in load order
  // that defines the symbol, whatever LD_LIBRARY_PATH or the alternatives system chose.
  void* symbol = ::dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (symbol == nullptr || ::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  if (::realpath(info.dli_fname, resolved) == nullptr) return info.dli_fname;
  return resolved;
}

}  // namespace stickler
