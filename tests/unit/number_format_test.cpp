#include "simulator/numerics/number_format.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace stickler {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

// DL16: 1 sign, 6 exponent (bias 31), 9 fraction bits; no subnormals; round to nearest, ties
// away from zero; the top code of the top binade is the merged NaN/infinity.
TEST(DL16, ExactValuesStay) {
  for (float x : {1.0f, -1.0f, 0.5f, 3.0f, 1.0f + 1.0f / 512, 1234.0f, -0.0f, 0.0f}) {
    EXPECT_EQ(roundToDL16(x), x) << x;
  }
  EXPECT_TRUE(std::signbit(roundToDL16(-0.0f)));
}

TEST(DL16, RoundsToNinefractionBits) {
  // ulp(1) = 2^-9. 1 + 2^-11 is a quarter ulp: down. 1 + 3 * 2^-11 is three quarters: up.
  EXPECT_EQ(roundToDL16(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(roundToDL16(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  // 1000.3 -> ulp in [512, 1024) is 1; 1000.3 rounds to 1000.
  EXPECT_EQ(roundToDL16(1000.3f), 1000.0f);
}

TEST(DL16, TiesGoAwayFromZero) {
  const float half_ulp = std::ldexp(1.0f, -10);
  EXPECT_EQ(roundToDL16(1.0f + half_ulp), 1.0f + 2 * half_ulp);
  EXPECT_EQ(roundToDL16(-(1.0f + half_ulp)), -(1.0f + 2 * half_ulp));
  // Also from an odd neighbour: IEEE's ties-to-even would go down here, DL16 goes up.
  const float odd = 1.0f + 2 * half_ulp;
  EXPECT_EQ(roundToDL16(odd + half_ulp), odd + 2 * half_ulp);
  // A tie that carries into the exponent: (2 - 2^-10) -> 2.
  EXPECT_EQ(roundToDL16(2.0f - half_ulp), 2.0f);
}

TEST(DL16, OverflowAtItsOwnRange) {
  const float max_finite = std::ldexp(1.0f + 510.0f / 512, 32);  // 8573157376
  EXPECT_EQ(max_finite, 8573157376.0f);
  EXPECT_EQ(roundToDL16(max_finite), max_finite);
  EXPECT_DOUBLE_EQ(maxFinite(NumberFormat::kDL16), 8573157376.0);
  // The next code up is the merged NaN/infinity: rounding there overflows.
  EXPECT_EQ(roundToDL16(std::ldexp(1.0f + 511.0f / 512, 32)), kInf);
  EXPECT_EQ(roundToDL16(-9e9f), -kInf);
  EXPECT_EQ(roundToDL16(-3.4028234663852886e38f), -kInf);
  // 100000 overflows fp16 but not DL16 (ulp 128 in [2^16, 2^17): 781.25 ulps -> 781).
  EXPECT_EQ(roundToDL16(100000.0f), 99968.0f);
  EXPECT_EQ(roundToFormat(100000.0f, NumberFormat::kFloat16), kInf);
}

TEST(DL16, SmallestNormalAndNoSubnormals) {
  const float smallest = std::ldexp(1.0f + 1.0f / 512, -31);  // 2^-31's own code is zero
  EXPECT_EQ(roundToDL16(smallest), smallest);
  EXPECT_EQ(roundToDL16(std::ldexp(1.0f, -31)), smallest);  // nearest non-zero neighbour
  EXPECT_EQ(roundToDL16(smallest / 2), smallest);           // a tie: up
  EXPECT_EQ(roundToDL16(std::ldexp(1.0f, -33)), 0.0f);      // below half the smallest
  EXPECT_EQ(roundToDL16(-std::ldexp(1.0f, -40)), -0.0f);
  // fp16 keeps subnormals that DL16 does not have: 2^-20 is an fp16 subnormal.
  EXPECT_EQ(roundToFormat(std::ldexp(1.0f, -20), NumberFormat::kFloat16), std::ldexp(1.0f, -20));
}

TEST(DL16, NaNAndInfinity) {
  EXPECT_TRUE(std::isnan(roundToDL16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(roundToDL16(kInf), kInf);
  EXPECT_EQ(roundToDL16(-kInf), -kInf);
}

TEST(OtherFormats, Float16AndBFloat16) {
  EXPECT_EQ(roundToFormat(65504.0f, NumberFormat::kFloat16), 65504.0f);
  EXPECT_EQ(roundToFormat(65520.0f, NumberFormat::kFloat16), kInf);
  EXPECT_EQ(roundToFormat(1.0f + std::ldexp(1.0f, -11), NumberFormat::kFloat16),
            1.0f);  // tie, even
  EXPECT_EQ(roundToFormat(1.0f + std::ldexp(1.0f, -8), NumberFormat::kBFloat16),
            1.0f);  // tie, even
  EXPECT_EQ(roundToFormat(1.0f + 3 * std::ldexp(1.0f, -8), NumberFormat::kBFloat16),
            1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(roundToFormat(0.1f, NumberFormat::kFloat32), 0.1f);
}

TEST(FormatNames, RoundTrip) {
  for (auto format : {NumberFormat::kDL16, NumberFormat::kFloat16, NumberFormat::kBFloat16,
                      NumberFormat::kFloat32}) {
    EXPECT_EQ(formatFromName(formatName(format)), format);
  }
  EXPECT_FALSE(formatFromName("fp8").has_value());
  EXPECT_LT(unitRoundoff(NumberFormat::kFloat16), unitRoundoff(NumberFormat::kDL16));
  EXPECT_LT(unitRoundoff(NumberFormat::kDL16), unitRoundoff(NumberFormat::kBFloat16));
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// The buffer version is what tensors use: it must agree with the scalar one everywhere.
TEST(DL16, BufferRoundingAgreesWithScalarRounding) {
  std::vector<float> values;
  for (int e = -45; e <= 40; ++e) {
    for (float m : {1.0f, 1.0009765625f, 1.00146484375f, 1.5f, 1.99951171875f, 1.9990234375f}) {
      values.push_back(std::ldexp(m, e));
      values.push_back(-std::ldexp(m, e));
    }
  }
  for (float special :
       {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN(), 8573157376.0f, 8.6e9f,
        std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()}) {
    values.push_back(special);
  }
  std::vector<float> rounded(values.size());
  roundToDL16(values.data(), rounded.data(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    const float expected = roundToDL16(values[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(rounded[i]));
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(rounded[i]), std::bit_cast<uint32_t>(expected))
          << values[i];
    }
  }
}

}  // namespace
}  // namespace stickler
