// What runModel (one forward) and runDecode (a prefill and its steps) do alike: the result's
// header for a model on a backend, and a device run's outputs compared with the reference's.
// Internal to simulator/run: it carries LibTorch types.
#pragma once

#include <vector>

#include "simulator/backends/backend.h"
#include "simulator/run/run_model.h"

namespace stickler {

// The model, the backend, its number format and profile, the placement of `request`'s device
// modules on `model` and the nodes an adapter placed on the host.
RunResult runResultFor(const LoadedModel& model, const RunRequest& request, const Backend& backend);

// `device` against `reference`, output by output as the card names them, with the verdict
// settings every run uses.
RunComparison compareWithReference(const std::vector<at::Tensor>& reference,
                                   const std::vector<at::Tensor>& device, const ModelCard& card,
                                   NumberFormat format);

}  // namespace stickler
