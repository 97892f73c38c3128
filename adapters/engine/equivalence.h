// The equivalence check an adapter must pass: the adapted model and the model before it, both
// on the CPU in float32 with the same inputs, give bitwise equal outputs or outputs within the
// adapter's declared bound in units in the last place.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

struct LoadedModel;

struct EquivalenceResult {
  int inputs_checked = 0;  // input sets: the example inputs and more drawn from other seeds
  int outputs_compared = 0;
  bool bitwise = true;
  // The largest distance seen, over every element of every output, in ULPs of float32: of the
  // element itself, or of the output's largest magnitude when that is fewer (see
  // docs/adapter-format.md).
  int64_t max_ulps = 0;
  double max_abs_error = 0;
  int64_t bound = 0;  // the adapter's max_ulps
  bool within_bound = true;
  std::string problem;  // why not: "output 0: shape [1, 16] vs [1, 17]", "value 3 of output 1 ..."
};

// Compares `before` and `after` on their example inputs and on `extra_seeds` further input
// sets drawn as the model card says.
EquivalenceResult checkEquivalence(const LoadedModel& before, const LoadedModel& after,
                                   int64_t bound, int extra_seeds = 2);

// Distance between two floats in units in the last place of float32: 0 when bitwise equal
// (+0 and -0 are 0 apart), the count of representable floats between them otherwise; NaN
// against anything but the same NaN is infinitely far (INT64_MAX).
int64_t ulpDistance(float a, float b);

nlohmann::json equivalenceToJson(const EquivalenceResult& result);

}  // namespace stickler
