// Causal localization (docs/localize-json.md): which module's execution on the device flips
// the end-to-end verdict. Hybrid runs put a prefix of the modules, in execution order, on the
// device and the rest on the CPU reference; a binary search finds the first module whose
// device execution makes the model fail, and two more runs confirm it: that module alone on
// the device fails, and everything but it on the device passes. Two identical whole-model
// runs come first, so that nondeterminism is never blamed on a layer.
#pragma once

#include <string>

#include "simulator/backends/backend_spec.h"
#include "simulator/diagnose/localization_result.h"
#include "simulator/diagnose/module_thresholds.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct LoadedModel;

struct LocalizeOptions {
  BackendSpec backend;  // spyre-sim:<profile>, or cpu-emulated:<format>
  // Per device run; no default here: the tools' input schema has it (timeoutField()).
  double timeout_seconds = 0;
  TaskControl control;           // progress and cancellation
  ThresholdSettings thresholds;  // how per-module thresholds are derived
  // Bisect the lowering's pass applications (fusions) instead of the modules.
  bool passes = false;
  // Go on past the first cause: each cause kept on the CPU, the rest searched again until it
  // passes on the device.
  bool all_causes = false;
  // Device runs in all, the determinism runs included; 0: defaultRunBudget of the units.
  int64_t max_runs = 0;
  // Within a single culprit module, search its own operators the same way for the one (or the
  // set) that makes it fail.
  bool operators = true;
};

// Four times the single-cause target (ceil(log2 M) + 4 runs for M units): room for a set of
// modules that fail only together, or three more causes, on a model of any size.
int64_t defaultRunBudget(int64_t units);

// What localization found (tools/localize_report writes it as stickler.localize). Throws
// UserError for a backend that is not a device backend.
LocalizationResult localizeDivergence(const LoadedModel& model, const LocalizeOptions& options);

// `stickler diagnose --mode numerics`: one whole-model device run compared with the reference
// module by module in lockstep, each module call's error set against its derived threshold,
// and the onsets of the deviations (schema stickler.diagnose, mode numerics). It names no
// culprit: that takes the hybrid runs of localizeDivergence.
LocalizationResult lockstepNumerics(const LoadedModel& model, const LocalizeOptions& options);

}  // namespace stickler
