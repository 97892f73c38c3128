#pragma once

#include <vector>

#include <torch/script.h>
#include "simulator/compare/output_report.h"
#include "simulator/graph/model_card.h"
#include "simulator/numerics/number_format.h"

namespace stickler {

// The defaults of the end-to-end verdict (docs/run-json.md).
struct VerdictSettings {
  double embedding_cosine = 0.999;  // embeddings and hidden states (hf-adapters' bar)
  // Logits: top-5 error relative to the row's largest magnitude, allowed up to this many unit
  // roundoffs of the device format (at least `min_logit_tolerance`).
  double logit_roundoffs = 32.0;
  double min_logit_tolerance = 1e-4;
};

double logitTolerance(NumberFormat format, const VerdictSettings& settings);

// Compares each output of a run with the reference's, by the card's output kinds: logits by
// top-1 agreement (positions whose reference margin is within the tolerance are ambiguous,
// not failures) and top-5 error; embeddings and hidden states by cosine similarity; every
// output also by max/mean absolute error, relative L2 and non-finite values. `passed` is the
// verdict over the outputs that have one.
OutputComparison compareOutputs(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& device, const ModelCard& card,
                                NumberFormat format, const VerdictSettings& settings);

}  // namespace stickler
