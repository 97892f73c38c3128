#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stickler {

// The number formats a device stores floating-point values in.
enum class NumberFormat {
  kFloat32,   // no rounding: the CPU reference
  kDL16,      // IBM DLFloat16: 1 sign, 6 exponent, 9 fraction bits (docs/number-formats.md)
  kFloat16,   // IEEE binary16
  kBFloat16,  // bfloat16
};

std::string formatName(NumberFormat format);  // "dl16", "fp16", "bf16", "fp32"
std::optional<NumberFormat> formatFromName(const std::string& name);

// The largest finite value, and the unit roundoff (half the gap between 1 and the next value).
double maxFinite(NumberFormat format);
double unitRoundoff(NumberFormat format);

// The nearest value of `format` to x, as a float (exact for every format here).
// DL16: round to nearest with ties away from zero; no subnormals (the lowest binade holds
// zero and normal numbers, so values below the smallest normal go to zero or to it); overflow
// to the merged NaN/infinity code, which reads back as a signed infinity (NaN stays NaN).
float roundToDL16(float x);
float roundToFormat(float x, NumberFormat format);

// roundToDL16 over a buffer (`out` may be `in`): integer operations only, so it vectorizes.
void roundToDL16(const float* in, float* out, int64_t count);

}  // namespace stickler
