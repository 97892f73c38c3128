// The equivalence check an adapter must pass: it may change how the model is expressed, not
// what it computes. The part of the model the adapter changed is run before and after, in
// float64 and in float32, on inputs captured from real runs; the adapted float64 results must
// agree with the original float64 results to float64 rounding (the same mathematics), and the
// adapted float32 results must be no further from the float64 original than the original
// float32 results are (no worse). Bitwise equality and float32 ULPs, which depend on the BLAS
// library and the CPU, are reported as information. docs/adapter-format.md explains the
// tolerances.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/engine/equivalence/agreement_summary.h"

namespace stickler {

struct LoadedModel;
struct ChangeRegion;
struct CapturedDraws;

struct EquivalenceResult {
  enum class Verdict { kUnchanged, kEquivalent, kDifferentMath, kWorseInFloat32 };
  Verdict verdict = Verdict::kUnchanged;
  // What was run: "unchanged" (the graph computes node for node the same: nothing to run),
  // "region" (the changed module calls alone), or "whole model".
  std::string scope = "unchanged";
  std::vector<std::string> modules;  // the region's module calls
  std::string why_whole;             // why the whole model was run instead of a region
  std::string region_problem;        // a region that differed, before the whole model decided
  int inputs_checked = 0;            // input draws
  AgreementSummary agreement;
  int64_t stated_max_ulps = 0;  // the adapter's max_ulps: information, not a bound

  bool accepted() const {
    return verdict == Verdict::kUnchanged || verdict == Verdict::kEquivalent;
  }
  const std::string& problem() const { return agreement.problem; }
};

// How many input draws an adaptation of `model` is checked on: the example inputs and more
// drawn from seeds 1, 2, ...: 3, or 2 for a model of more than kManyParameters parameters,
// whose float64 runs are what the check costs.
inline constexpr int64_t kManyParameters = 100'000'000;
int equivalenceDraws(const LoadedModel& model);

// The check of one adaptation from `before` to `after`, on `region` (findChangeRegion). `feeds`,
// when it holds every draw, is what feeds the region (region.captured, captured from runs of
// either model); else the draws are captured by running `after`. When a region differs, the
// whole model decides: a change later layers absorb exactly (a mask fill that softmax turns to
// the same zeros) is the same mathematics end to end.
EquivalenceResult checkAdaptation(const LoadedModel& before, const LoadedModel& after,
                                  const ChangeRegion& region, const CapturedDraws* feeds);

// The float64 results of a model on its example inputs: the truth a stack of adaptations on it
// is judged against. It does not depend on the adaptations, so adapt computes it beside them.
class Float64Truth;
// Null when `cancelled` turned true before it was done.
std::shared_ptr<const Float64Truth> computeFloat64Truth(
    const LoadedModel& original, const std::atomic<bool>* cancelled = nullptr);

// The whole of `original` against the whole of `adapted` (a stack of adaptations) on the
// example inputs: the check a stack passes once at its end. `truth`, when given, is
// computeFloat64Truth(original). Throws Cancelled (simulator/support/task_control.h) once
// `cancelled` turns true.
EquivalenceResult checkWholeModel(const LoadedModel& original, const LoadedModel& adapted,
                                  int draws = 1, const Float64Truth* truth = nullptr,
                                  const std::atomic<bool>* cancelled = nullptr);

// The BLAS library LibTorch's float32 matrix products run on (the file it was loaded from): the
// bitwise and ULP information depends on it.
std::string blasLibrary();

}  // namespace stickler
