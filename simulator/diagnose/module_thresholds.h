// Per-module thresholds derived from data (DESIGN.md: thresholds come from data): for each
// module call, the relative L2 error between the CPU reference (fp32) and the device's number
// format emulated on the CPU, over several inputs; a high percentile of it times a margin is
// the error the device may show there before the module counts as deviating. Derived once per
// archive, inputs and settings, and kept in a golden cache keyed by all three.
#pragma once

#include <string>
#include <vector>

#include "simulator/numerics/number_format.h"

namespace stickler {

struct LoadedModel;

struct ThresholdSettings {
  int inputs = 3;            // the example inputs and inputs-1 more seeds
  double percentile = 0.99;  // of the emulated errors over the inputs (nearest rank)
  double margin = 4.0;       // times that percentile
};

struct ModuleThresholds {
  std::vector<double> emulated;   // per module call: the percentile of the emulated error
  std::vector<double> threshold;  // per module call: max(margin x emulated, unit roundoff)
  std::string cache_key;          // SHA-256 of archive identity, inputs, format and settings
  bool from_cache = false;
};

// The thresholds for `model` on a device of `format`, from the golden cache under
// goldenCacheDir() when present, else derived (inputs x one CPU run and one emulated run) and
// stored there; kept with the model for its later calls (`from_cache` then true).
ModuleThresholds moduleThresholds(const LoadedModel& model, NumberFormat format,
                                  const ThresholdSettings& settings);

// $STICKLER_CACHE_DIR/golden, else $XDG_CACHE_HOME/stickler/golden, else
// ~/.cache/stickler/golden.
std::string goldenCacheDir();

}  // namespace stickler
