// Which BLAS library this process computes its matrix products with. OpenBLAS picks kernels and
// blocking per CPU and per shape, the reference BLAS sums in plain loop order: float32 results
// that are bitwise equal with one can differ in the last bits with the other, so evidence that
// reports bitwise equality or ULPs names the library it was measured with.
#pragma once

#include <string>

namespace stickler {

// The real path of the library that provides sgemm_ in this process ("" when none does), e.g.
// /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3.
std::string blasLibraryPath();

}  // namespace stickler
