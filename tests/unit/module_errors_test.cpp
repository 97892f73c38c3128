// The per-module error metrics that lockstep comparison reports.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace stickler
