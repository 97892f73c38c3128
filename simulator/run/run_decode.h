// `stickler run --decode N`: a decoder's prefill and N greedy steps on a backend and on the CPU
// reference, in lockstep, through the card's decode interface (docs/model-card.md "Decoding").
// The reference's token is fed to both at every step (teacher forcing), so that one flipped
// token does not derail the steps after it; each side keeps its own KV cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "simulator/graph/model_card.h"
#include "simulator/run/run_model.h"

namespace stickler {

// What localization bisects (or numerics compares) after a decode: a step's graph (the
// prefill for step 0) with the inputs the reference fed it (the reference's cache after the
// steps before it) as example inputs, so that the step is judged on its own and not on the
// device's earlier drift. The step is `wanted`, else the first that does not pass, else (every
// step passed) the prefill. A graph that does not compile, or a device run that does not
// complete, is the step whatever was wanted: the decode stops there.
struct StepToLocalize {
  std::optional<int64_t> wanted;  // in: this step, failing or not (0 to the decode's steps)
  std::optional<int64_t> step;    // out: the step `model` is; none: every step passed
  bool failing = false;           // out: that step does not pass
  ModelGraph graph = ModelGraph::kPrefill;
  std::shared_ptr<const LoadedModel> model;
};

// The prefill's run (compile, run, comparison of every output) with the steps in `decode`;
// the verdict passes when every step passes (step 0, the prefill, with all its outputs). With
// `to_localize`, also what localization bisects.
RunResult runDecode(const RunRequest& request, const TaskControl& control,
                    StepToLocalize* to_localize = nullptr);

}  // namespace stickler
