// How each output of a device run compares with the reference's, as plain data (LibTorch-free):
// filled by compareOutputs (output_comparison.h), written out by the tools layer
// (tools/reports/result_json.h, `comparison.outputs` in docs/run-json.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/graph/model_card.h"

namespace stickler {

enum class OutputVerdict {
  kPass,
  kFail,
  kNone,  // an output of kind "other": measured, informative only
};

// "pass", "fail", "none".
const char* outputVerdictName(OutputVerdict verdict);

struct OutputMetrics {
  int64_t non_finite = 0;  // NaN or inf on the device
  // Null when not finite.
  std::optional<double> max_abs_error;
  std::optional<double> mean_abs_error;
  std::optional<double> relative_l2;
  std::optional<double> cosine;
};

// Logits: does the device pick the same token, and how far are the top-5 logits.
struct LogitAgreement {
  int64_t positions = 0;
  int64_t top1_agree = 0;
  int64_t top1_ambiguous = 0;  // the reference's own margin is within the tolerance
  int64_t top1_disagree = 0;
  std::optional<double> top5_relative_error;  // null when not finite
  double tolerance = 0;
};

struct OutputReport {
  std::string name;
  OutputKind kind = OutputKind::kOther;
  std::vector<int64_t> shape;            // the reference's
  std::optional<bool> equal;             // integer outputs: compared exactly, with no verdict
  std::optional<OutputMetrics> metrics;  // floating-point outputs of the same shape
  std::optional<LogitAgreement> logits;
  std::optional<double> relative_l2_tolerance;  // activations: the card's
  std::optional<OutputVerdict> verdict;  // none for integer outputs
  std::string reason;                    // why it failed
};

struct OutputComparison {
  std::vector<OutputReport> outputs;
  bool passed = false;  // over the outputs that have a verdict
};

}  // namespace stickler
