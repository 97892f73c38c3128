// The lowest KV-cache cosine of a decode step, over every layer's keys and values: the one
// figure the decode's reports give per step (run_decode.cpp, the gate's and sweep's summaries,
// the HTML charts). A cosine that was not finite counts as -1, as far as a cosine goes.
#pragma once

#include <algorithm>
#include <optional>

#include "simulator/run/decode_report.h"

namespace stickler {

inline std::optional<double> lowestKvCosine(const DecodeStepReport& step) {
  std::optional<double> lowest;
  for (const auto* cosines : {&step.key_cosine, &step.value_cosine}) {
    for (const auto& value : *cosines) {
      const double low = value.value_or(-1.0);
      lowest = lowest ? std::min(*lowest, low) : low;
    }
  }
  return lowest;
}

}  // namespace stickler
