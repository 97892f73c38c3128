// The search behind causal localization, apart from running anything: given M units in
// execution order whose all-on-device run fails, find the first unit whose device execution
// flips the verdict, then confirm it. A probe runs the model with a set of units on the device
// and returns the verdict (kPass, or anything else for a failure). Kept free of LibTorch so
// that the search itself is tested with synthetic probes.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "simulator/run/run_verdict.h"

namespace stickler {

// `units` are indices into the execution order; `label` says what is on the device, for reports.
using CausalProbe =
    std::function<RunVerdict(const std::vector<size_t>& units, const std::string& label)>;

struct CausalFinding {
  enum class Kind {
    kLocalized,        // alone on the device it fails; everything else there passes
    kWithOtherCauses,  // alone it fails, but the model fails without it as well
    kNeedsSeveral,     // alone it passes: units [first, culprit] fail only together
  };
  Kind kind = Kind::kLocalized;
  size_t culprit = 0;
  size_t first = 0;  // kNeedsSeveral: the first unit of the shortest failing run
  RunVerdict alone_verdict = RunVerdict::kFail;
  RunVerdict rest_verdict = RunVerdict::kFail;
};

// `unit_names` label the probes; the probe for all units is not repeated (the caller has the
// whole-model verdict, a failure). Uses ceil(log2 M) + 2 probes for a single culprit.
CausalFinding causalSearch(const std::vector<std::string>& unit_names, const CausalProbe& probe);

}  // namespace stickler
