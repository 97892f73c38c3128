#include "simulator/numerics/number_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace stickler {
namespace {

// DL16 keeps 9 of float32's 23 fraction bits.
constexpr int kDroppedBits = 23 - 9;
constexpr uint32_t kHalfUlp = 1u << (kDroppedBits - 1);
constexpr uint32_t kKeptMask = ~((1u << kDroppedBits) - 1);
// Exponent bias 31: normal binades 2^-31 .. 2^32. The top binade's all-ones fraction is the
// merged NaN/infinity code, so the largest finite value has fraction 510/512.
const float kDL16MaxFinite = std::ldexp(1.0f + 510.0f / 512.0f, 32);
const float kDL16LowestBinade = std::ldexp(1.0f, -31);
// The code of 2^-31 (exponent and fraction all zero) is zero: the smallest positive value is
// the next one up.
const float kDL16SmallestPositive = std::ldexp(1.0f + 1.0f / 512.0f, -31);

float roundToFloat16(float x) {
  // IEEE binary16: 10 fraction bits, subnormals below 2^-14, round to nearest even (the
  // default floating-point environment's nearbyint), overflow from 65520 on.
  if (std::isnan(x) || std::isinf(x)) return x;
  const float magnitude = std::fabs(x);
  if (magnitude >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude in [2^(exponent-1), 2^exponent)
  const int quantum_exponent = std::max(exponent - 1, -14) - 10;
  const float rounded =
      std::ldexp(std::nearbyint(std::ldexp(magnitude, -quantum_exponent)), quantum_exponent);
  return std::copysign(rounded, x);
}

float roundToBFloat16(float x) {
  if (std::isnan(x)) return x;
  uint32_t bits = std::bit_cast<uint32_t>(x);
  // Round to nearest even on the 16 dropped bits, as LibTorch's bfloat16 conversion does.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(bits & 0xffff0000u);
}

}  // namespace

std::string formatName(NumberFormat format) {
  switch (format) {
    case NumberFormat::kFloat32:
      return "fp32";
    case NumberFormat::kDL16:
      return "dl16";
    case NumberFormat::kFloat16:
      return "fp16";
    case NumberFormat::kBFloat16:
      return "bf16";
  }
  return "fp32";
}

std::optional<NumberFormat> formatFromName(const std::string& name) {
  if (name == "dl16" || name == "dlfloat16") return NumberFormat::kDL16;
  if (name == "fp16" || name == "float16") return NumberFormat::kFloat16;
  if (name == "bf16" || name == "bfloat16") return NumberFormat::kBFloat16;
  if (name == "fp32" || name == "float32") return NumberFormat::kFloat32;
  return std::nullopt;
}

double maxFinite(NumberFormat format) {
  switch (format) {
    case NumberFormat::kDL16:
      return kDL16MaxFinite;
    case NumberFormat::kFloat16:
      return 65504.0;
    case NumberFormat::kBFloat16:
      return 3.3895313892515355e38;
    case NumberFormat::kFloat32:
      return std::numeric_limits<float>::max();
  }
  return std::numeric_limits<float>::max();
}

double unitRoundoff(NumberFormat format) {
  switch (format) {
    case NumberFormat::kDL16:
      return std::ldexp(1.0, -10);
    case NumberFormat::kFloat16:
      return std::ldexp(1.0, -11);
    case NumberFormat::kBFloat16:
      return std::ldexp(1.0, -8);
    case NumberFormat::kFloat32:
      return std::ldexp(1.0, -24);
  }
  return std::ldexp(1.0, -24);
}

float roundToDL16(float x) {
  if (std::isnan(x) || x == 0.0f) return x;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = bits & 0x80000000u;
  const float magnitude = std::fabs(x);
  if (magnitude < kDL16LowestBinade) {
    // Below every normal value: the nearest of zero and the smallest positive, ties up.
    const float result = magnitude >= kDL16SmallestPositive / 2 ? kDL16SmallestPositive : 0.0f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(result));
  }
  // Ties away from zero: add half an ulp to the magnitude and truncate; a carry moves into the
  // exponent, as it should.
  uint32_t rounded = ((bits & 0x7fffffffu) + kHalfUlp) & kKeptMask;
  float result = std::bit_cast<float>(rounded);
  if (result == kDL16LowestBinade) result = kDL16SmallestPositive;  // that code means zero
  if (result > kDL16MaxFinite) result = std::numeric_limits<float>::infinity();
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(result));
}

void roundToDL16(const float* in, float* out, int64_t count) {
  // The same rounding as roundToDL16(float), on the bits: see the constants above.
  constexpr uint32_t kMaxFiniteBits = 0x4FFF8000u;  // 2^32 * (1 + 510/512)
  constexpr uint32_t kInfinityBits = 0x7F800000u;
  constexpr uint32_t kLowestBinadeBits = 0x30000000u;  // 2^-31
  constexpr uint32_t kSmallestBits = 0x30004000u;      // 2^-31 * (1 + 2^-9)
  constexpr uint32_t kHalfSmallestBits = 0x2F804000u;  // half of that
  // Branch-free (masks instead of conditions) so that the compiler vectorizes the loop; an
  // element is read before it is written, so `out == in` is fine.
  auto select = [](uint32_t condition, uint32_t if_true, uint32_t if_false) {
    const uint32_t mask = 0u - condition;  // all ones when condition is 1
    return (if_true & mask) | (if_false & ~mask);
  };
#pragma GCC ivdep
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof bits);
    const uint32_t sign = bits & 0x80000000u;
    const uint32_t magnitude = bits & 0x7fffffffu;
    uint32_t rounded = (magnitude + kHalfUlp) & kKeptMask;
    rounded = select(rounded == kLowestBinadeBits, kSmallestBits, rounded);
    rounded = select(rounded > kMaxFiniteBits, kInfinityBits, rounded);
    const uint32_t tiny = select(magnitude >= kHalfSmallestBits, kSmallestBits, 0u);
    rounded = select(magnitude < kLowestBinadeBits, tiny, rounded);
    const uint32_t result = select(magnitude > kInfinityBits, bits, sign | rounded);  // NaN stays
    std::memcpy(&out[i], &result, sizeof result);
  }
}

float roundToFormat(float x, NumberFormat format) {
  switch (format) {
    case NumberFormat::kDL16:
      return roundToDL16(x);
    case NumberFormat::kFloat16:
      return roundToFloat16(x);
    case NumberFormat::kBFloat16:
      return roundToBFloat16(x);
    case NumberFormat::kFloat32:
      return x;
  }
  return x;
}

}  // namespace stickler
