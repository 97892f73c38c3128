// The verdict on a run's outputs against the reference's, and the figures it reports: what a
// localization trial, `run` and the gate all decide by.
#include "simulator/compare/output_comparison.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "simulator/graph/model_card.h"

namespace stickler {
namespace {

ModelCard cardWith(OutputKind kind) {
  ModelCard card;
  card.outputs.push_back({"out", kind});
  return card;
}

OutputReport compared(const at::Tensor& reference, const at::Tensor& device, OutputKind kind) {
  const OutputComparison comparison = compareOutputs({reference}, {device}, cardWith(kind),
                                                     NumberFormat::kFloat16, VerdictSettings{});
  EXPECT_EQ(comparison.outputs.size(), 1u);
  return comparison.outputs.at(0);
}

TEST(OutputComparison, TheFiguresAreTheDifferencesOwn) {
  const at::Tensor reference = torch::tensor({3.0F, 4.0F, 0.0F, -1.0F});
  const at::Tensor device = torch::tensor({3.0F, 4.5F, 0.0F, -2.0F});
  const OutputReport report = compared(reference, device, OutputKind::kHiddenStates);
  ASSERT_TRUE(report.metrics.has_value());
  const OutputMetrics& metrics = *report.metrics;
  EXPECT_EQ(metrics.non_finite, 0);
  EXPECT_DOUBLE_EQ(*metrics.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(*metrics.mean_abs_error, 1.5 / 4);
  // |d - r| = (0, 0.5, 0, 1): sqrt(1.25) over |r| = sqrt(26).
  EXPECT_NEAR(*metrics.relative_l2, std::sqrt(1.25) / std::sqrt(26.0), 1e-12);
  // r.d = 9 + 18 + 0 + 2 = 29 over sqrt(26) sqrt(9 + 20.25 + 4).
  EXPECT_NEAR(*metrics.cosine, 29.0 / (std::sqrt(26.0) * std::sqrt(33.25)), 1e-12);
  EXPECT_EQ(report.verdict, OutputVerdict::kFail);  // cosine 0.98 < 0.999

  const OutputReport same = compared(reference, reference.clone(), OutputKind::kHiddenStates);
  EXPECT_EQ(*same.metrics->max_abs_error, 0.0);
  EXPECT_NEAR(*same.metrics->cosine, 1.0, 1e-15);
  EXPECT_EQ(same.verdict, OutputVerdict::kPass);
}

TEST(OutputComparison, NonFiniteValuesOnTheDeviceFailAndLeaveNoFigure) {
  const at::Tensor reference = torch::tensor({1.0F, 2.0F, 3.0F});
  const at::Tensor device = torch::tensor({1.0F, std::numeric_limits<float>::quiet_NaN(), 3.0F});
  const OutputReport report = compared(reference, device, OutputKind::kHiddenStates);
  EXPECT_EQ(report.metrics->non_finite, 1);
  EXPECT_FALSE(report.metrics->max_abs_error.has_value());
  EXPECT_FALSE(report.metrics->mean_abs_error.has_value());
  EXPECT_EQ(report.verdict, OutputVerdict::kFail);
  EXPECT_EQ(report.reason, "non-finite values on the device");

  const at::Tensor infinite = torch::tensor({1.0F, std::numeric_limits<float>::infinity(), 3.0F});
  EXPECT_EQ(compared(reference, infinite, OutputKind::kHiddenStates).metrics->non_finite, 1);
}

// An activation passes while its relative L2 error is within the card's tolerance, whatever
// its cosine: a value scaled by 1.01 points the same way and is still 1% off.
TEST(OutputComparison, AnActivationIsJudgedByItsRelativeErrorAgainstTheCardsTolerance) {
  ModelCard card;
  card.outputs.push_back({"out", OutputKind::kActivation, 0.005});
  const at::Tensor reference = torch::tensor({3.0F, -4.0F, 0.5F, 2.0F});
  auto judged = [&](const at::Tensor& device) {
    return compareOutputs({reference}, {device}, card, NumberFormat::kDL16, VerdictSettings{})
        .outputs.at(0);
  };
  const OutputReport scaled = judged(reference * 1.01);
  EXPECT_NEAR(*scaled.metrics->relative_l2, 0.01, 1e-6);
  EXPECT_NEAR(*scaled.metrics->cosine, 1.0, 1e-6);
  EXPECT_EQ(scaled.verdict, OutputVerdict::kFail);
  EXPECT_EQ(scaled.reason, "relative L2 error beyond the card's tolerance");
  EXPECT_EQ(scaled.relative_l2_tolerance, 0.005);

  const OutputReport close = judged(reference * 1.004);
  EXPECT_EQ(close.verdict, OutputVerdict::kPass);

  const at::Tensor nan = torch::tensor({3.0F, std::numeric_limits<float>::quiet_NaN(), 0.5F, 2.0F});
  EXPECT_EQ(judged(nan).verdict, OutputVerdict::kFail);
}

TEST(OutputComparison, LogitsAreJudgedByTopOneAndTheReferencesOwnMargin) {
  // Row 0: a clear top-1 the device keeps. Row 1: a clear top-1 the device loses. Row 2: the
  // reference's top two within the tolerance of each other, swapped on the device: ambiguous.
  const at::Tensor reference =
      torch::tensor({{5.0F, 1.0F, 0.0F}, {0.0F, 4.0F, 1.0F}, {2.0F, 2.0F - 1e-6F, 0.0F}});
  const at::Tensor device =
      torch::tensor({{5.0F, 1.0F, 0.0F}, {0.0F, 1.0F, 4.0F}, {2.0F - 1e-6F, 2.0F, 0.0F}});
  const OutputReport report = compared(reference, device, OutputKind::kLogits);
  ASSERT_TRUE(report.logits.has_value());
  EXPECT_EQ(report.logits->positions, 3);
  EXPECT_EQ(report.logits->top1_agree, 1);
  EXPECT_EQ(report.logits->top1_disagree, 1);
  EXPECT_EQ(report.logits->top1_ambiguous, 1);
  // Row 1's worst top-5 error, 3, over its largest magnitude, 4.
  EXPECT_NEAR(*report.logits->top5_relative_error, 0.75, 1e-6);
  EXPECT_EQ(report.verdict, OutputVerdict::kFail);
  EXPECT_EQ(report.reason, "top-1 differs at positions where the reference is clear");

  const at::Tensor ambiguous_only = reference.index({torch::indexing::Slice(2, 3)});
  const at::Tensor swapped = device.index({torch::indexing::Slice(2, 3)});
  const OutputReport passes = compared(ambiguous_only, swapped, OutputKind::kLogits);
  EXPECT_EQ(passes.logits->top1_ambiguous, 1);
  EXPECT_EQ(passes.verdict, OutputVerdict::kPass);
}

// Localization prepares the reference once and compares every trial with it: each comparison
// is the trial's own, whatever was compared before, and reads the device's logits in their own
// precision.
TEST(OutputComparison, AReferencePreparedOnceJudgesEachRunOnItsOwn) {
  const at::Tensor reference = torch::tensor({{5.0F, 1.0F, 0.0F, -1.0F}, {0.0F, 4.0F, 1.0F, 2.0F}});
  const ReferenceOutputs prepared({reference}, cardWith(OutputKind::kLogits));
  auto judged = [&](const at::Tensor& device) {
    return compareOutputs(prepared, {device}, NumberFormat::kFloat16, VerdictSettings{})
        .outputs.at(0);
  };
  const OutputReport same = judged(reference.clone());
  EXPECT_EQ(same.verdict, OutputVerdict::kPass);
  EXPECT_EQ(same.logits->top1_agree, 2);
  EXPECT_EQ(*same.logits->top5_relative_error, 0.0);

  // Row 1's top-1 moves to the last word: 4 -> 1 there, 2 -> 5.
  const at::Tensor swapped = torch::tensor({{5.0F, 1.0F, 0.0F, -1.0F}, {0.0F, 1.0F, 1.0F, 5.0F}});
  const OutputReport lost = judged(swapped);
  EXPECT_EQ(lost.verdict, OutputVerdict::kFail);
  EXPECT_EQ(lost.logits->top1_disagree, 1);
  EXPECT_NEAR(*lost.logits->top5_relative_error, 3.0 / 4.0, 1e-12);

  // bf16 logits (exact in bf16 here) compare as the same values.
  EXPECT_EQ(judged(reference.to(torch::kBFloat16)).verdict, OutputVerdict::kPass);
  // A NaN is the device's top-1 (as argmax has it): a clear top-1 lost, and non-finite.
  const at::Tensor nan = torch::tensor(
      {{5.0F, std::numeric_limits<float>::quiet_NaN(), 0.0F, -1.0F}, {0.0F, 4.0F, 1.0F, 2.0F}});
  const OutputReport broken = judged(nan);
  EXPECT_EQ(broken.logits->top1_disagree, 1);
  EXPECT_EQ(broken.metrics->non_finite, 1);
  EXPECT_EQ(broken.verdict, OutputVerdict::kFail);
  EXPECT_EQ(judged(reference.clone()).verdict, OutputVerdict::kPass);
}

}  // namespace
}  // namespace stickler
