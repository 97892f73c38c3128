// Which modules of a device run deviate from the reference beyond their derived threshold:
// the reference's module outputs are recorded for the example inputs, a device run compares
// with them in lockstep, and each module call's relative L2 error is set against its threshold
// (module_thresholds.h) and against the error of the emulated format alone (the three-way
// ratio: about 1x is the format's expected noise).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simulator/compare/module_errors.h"
#include "simulator/diagnose/localization_result.h"
#include "simulator/diagnose/module_thresholds.h"

namespace stickler {

struct LoadedModel;

class ModuleDeviation {
 public:
  ModuleDeviation(const LoadedModel& model, NumberFormat format, const ThresholdSettings& settings);

  // What one device run on the example inputs, compared in lockstep (RunOptions::lockstep),
  // found.
  void take(const LockstepRecord& record);

  // The thresholds' basis and every compared module call, in execution order.
  NumericsReport report() const;
  // Deviations absorbed downstream: module calls over their threshold for which `passes(path)`
  // says the end-to-end verdict passes with the module on the device, as onsets (the first
  // such module, or one whose error jumps tenfold past all before it) with the number of
  // modules downstream that carry each.
  std::vector<DeviationOnset> absorbed(
      const std::function<bool(const std::string& path)>& passes) const;
  // The first operator whose result became non-finite in the compared run where the reference's
  // is finite (one more reference run, on the example inputs, when there are candidates).
  std::optional<FirstNonFinite> firstNonFinite() const;
  // The first call of `path`: its error, threshold and ratio; none when not compared.
  std::optional<UnitDeviation> errorsOf(const std::string& path) const;

 private:
  bool over(const ModuleErrors& errors) const;
  std::optional<double> ratio(const ModuleErrors& errors) const;

  const LoadedModel& model_;
  NumberFormat format_;
  ThresholdSettings settings_;
  ModuleThresholds thresholds_;
  std::vector<ModuleErrors> errors_;
  std::vector<NonFiniteCandidate> non_finite_;
};

}  // namespace stickler
