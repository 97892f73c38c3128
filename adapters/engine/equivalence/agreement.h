// The judgement of one equivalence check, output by output: the adapted computation against the
// original, both run in float64 (the same mathematics?) and in float32 (no worse?), with the
// original in float64 as the truth. See docs/adapter-format.md, "The equivalence check".
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

#include "adapters/engine/equivalence/agreement_summary.h"

namespace stickler {

// Accumulates the comparison over outputs and input draws.
class Agreement {
 public:
  // One compared value (`name`), on one input draw: the original and the adapted computation
  // in float32 and in float64. Values are tensors, scalars, or tuples and lists of them.
  void add(const std::string& name, int draw, const c10::IValue& original32,
           const c10::IValue& adapted32, const c10::IValue& original64,
           const c10::IValue& adapted64);
  AgreementSummary summary() const;

 private:
  struct Float32Tally {
    std::string name;
    double original_squares = 0;  // sum of (original32 - original64)^2
    double adapted_squares = 0;   // sum of (adapted32 - original64)^2
    double truth_squares = 0;     // sum of original64^2
    int64_t count = 0;
    int64_t original_nonfinite = 0;  // float32 results not finite where the truth is
    int64_t adapted_nonfinite = 0;
    std::string first_nonfinite;  // where the adapted float32 result first was not finite
    // Where the adapted float32 error was largest.
    double worst_error = -1;
    std::string worst_at;
  };

  void mismatch(const std::string& message);
  void addTensors(const std::string& name, int draw, const at::Tensor& original32,
                  const at::Tensor& adapted32, const at::Tensor& original64,
                  const at::Tensor& adapted64);
  Float32Tally& tallyFor(const std::string& name);

  AgreementSummary summary_;
  bool mismatched_ = false;  // shapes, types or exact values differ: the first one is told
  std::vector<Float32Tally> tallies_;
};

// Distance between two floats in units in the last place of float32: 0 when bitwise equal
// (+0 and -0 are 0 apart), the count of representable floats between them otherwise; NaN
// against anything but NaN is infinitely far (INT64_MAX).
int64_t ulpDistance(float a, float b);

}  // namespace stickler
