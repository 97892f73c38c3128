// The per-module error metrics that lockstep comparison reports.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "simulator/compare/module_errors.h"

namespace stickler {
namespace {

TEST(ModuleErrors, MetricsOfAKnownDifference) {
  const at::Tensor reference = at::tensor({3.0f, 4.0f});  // norm 5
  const at::Tensor observed = at::tensor({3.0f, 4.5f});   // off by 0.5 in one value
  const ModuleErrors errors = compareActivations({reference}, {observed});
  EXPECT_DOUBLE_EQ(errors.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(errors.mean_abs, 0.25);
  EXPECT_NEAR(errors.rel_l2, 0.1, 1e-12);
  EXPECT_NEAR(errors.sqnr_db, 20.0, 1e-9);  // 20 log10(5 / 0.5)
  EXPECT_NEAR(errors.cosine, (9.0 + 18.0) / (5.0 * std::sqrt(9.0 + 20.25)), 1e-12);
  EXPECT_FALSE(errors.non_finite);
}

TEST(ModuleErrors, EqualActivationsHaveNoError) {
  const at::Tensor values = at::randn({4, 8});
  const ModuleErrors errors = compareActivations({values}, {values.clone()});
  EXPECT_EQ(errors.rel_l2, 0.0);
  EXPECT_TRUE(std::isinf(errors.sqnr_db));
}

TEST(ModuleErrors, ANaNWhereTheReferenceIsFiniteIsInfinitelyFar) {
  const at::Tensor reference = at::tensor({1.0f, 2.0f});
  const at::Tensor observed = at::tensor({1.0f, std::nanf("")});
  const ModuleErrors errors = compareActivations({reference}, {observed});
  EXPECT_TRUE(errors.non_finite);
  EXPECT_TRUE(std::isinf(errors.rel_l2));
}

// What a model host sends back of a lockstep comparison reads back as it was, infinities, NaN
// and subnormals included; a line that does not parse is skipped, not fatal.
TEST(LockstepRecord, ReadsBackAsItWasWritten) {
  LockstepRecord record;
  ModuleErrors first;
  first.call = 3;
  first.max_abs = 0.5;
  first.mean_abs = 4.9e-320;  // subnormal: std::stod would throw on it
  first.cosine = 0.999;
  first.rel_l2 = 0.125;
  first.sqnr_db = std::numeric_limits<double>::infinity();
  ModuleErrors second;
  second.call = 7;
  second.rel_l2 = std::nan("");
  second.non_finite = true;
  record.modules = {first, second};
  record.non_finite = {{42, true, 6}, {43, false, 1}};

  const LockstepRecord back =
      decodeLockstepRecord(encodeLockstepRecord(record) + "7 garbage\nnonfinite x nan 1\n");
  ASSERT_EQ(back.modules.size(), 2u);
  EXPECT_EQ(back.modules[0].call, 3);
  EXPECT_DOUBLE_EQ(back.modules[0].max_abs, 0.5);
  EXPECT_GT(back.modules[0].mean_abs, 0.0);
  EXPECT_NEAR(back.modules[0].cosine, 0.999, 1e-12);
  EXPECT_DOUBLE_EQ(back.modules[0].rel_l2, 0.125);
  EXPECT_TRUE(std::isinf(back.modules[0].sqnr_db));
  EXPECT_FALSE(back.modules[0].non_finite);
  EXPECT_EQ(back.modules[1].call, 7);
  EXPECT_TRUE(std::isnan(back.modules[1].rel_l2));
  EXPECT_TRUE(back.modules[1].non_finite);
  ASSERT_EQ(back.non_finite.size(), 2u);
  EXPECT_EQ(back.non_finite[0].position, 42);
  EXPECT_TRUE(back.non_finite[0].nan);
  EXPECT_EQ(back.non_finite[0].elements, 6);
  EXPECT_FALSE(back.non_finite[1].nan);
  EXPECT_TRUE(decodeLockstepRecord("").modules.empty());
}

}  // namespace
}  // namespace stickler
