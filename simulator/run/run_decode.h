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

// What localization bisects after a decode: the first step that does not pass, its graph (the
// prefill for step 0) with the inputs the reference fed it (the reference's cache after the
// steps before it) as example inputs, so that the step is judged on its own and not on the
// device's earlier drift; the prefill when every step passes.
struct StepToLocalize {
  std::optional<int64_t> failing_step;  // none: every step passed
  ModelGraph graph = ModelGraph::kPrefill;
  std::shared_ptr<const LoadedModel> model;
};

// The prefill's run (compile, run, comparison of every output) with the steps in `decode`;
// the verdict passes when every step passes (step 0, the prefill, with all its outputs). With
// `to_localize`, also what localization bisects.
RunResult runDecode(const RunRequest& request, const TaskControl& control,
                    StepToLocalize* to_localize = nullptr);

}  // namespace stickler
