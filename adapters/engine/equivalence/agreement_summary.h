// What an equivalence check concluded, in numbers (no LibTorch: the tools report it).
#pragma once

#include <cstdint>
#include <string>

namespace stickler {

// How far apart float64 results of the same mathematics may be, relative to float64 rounding
// estimated from the data (see Agreement::add); and how much larger the adapted float32 error
// may be than the original's.
inline constexpr double kFloat64Margin = 1024;
inline constexpr double kFloat32Factor = 4;

struct AgreementSummary {
  bool same_math = true;
  bool no_worse = true;
  int outputs_compared = 0;
  // Float64: the largest ratio of a difference to its tolerance (at most 1 passes), and that
  // difference and tolerance.
  double float64_ratio = 0;
  double float64_difference = 0;
  double float64_tolerance = 0;
  // Float32, for the output whose error grew most: RMS errors against the float64 original,
  // and their ratio (the original's error floored at float32 rounding of the output's size).
  double float32_error_original = 0;
  double float32_error_adapted = 0;
  double float32_factor = 0;
  // Information only (they depend on the BLAS library and the CPU): whether the float32 results
  // are bitwise equal, and their largest distance in float32 ULPs at the output's scale.
  bool bitwise = true;
  int64_t max_ulps = 0;
  std::string problem;  // why the check fails, with the numbers and the position
};

}  // namespace stickler
