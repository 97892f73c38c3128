// `stickler run --decode N`: a decoder's prefill and N greedy steps on a backend and on the CPU
// reference, in lockstep, through the card's decode interface (docs/model-card.md "Decoding").
// The reference's token is fed to both at every step (teacher forcing), so that one flipped
// token does not derail the steps after it; each side keeps its own KV cache.
#pragma once

#include "simulator/run/run_model.h"

namespace stickler {

// The run of the prefill (compile, run, comparison of every output) with the steps in
// `decode`; the verdict passes when the prefill's comparison and every step pass.
RunResult runDecode(const RunRequest& request, const TaskControl& control);

}  // namespace stickler
