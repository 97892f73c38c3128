#pragma once

#include <string>
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

// The reference's side of a comparison, worked out once: each output read flat in the precision
// it is compared in, and for logits each row's top-5 and largest magnitude. Localization
// compares a dozen runs with one reference, and the reference's side cost as much as the run's.
class ReferenceOutputs {
 public:
  ReferenceOutputs(const std::vector<at::Tensor>& reference, const ModelCard& card);

  struct Output {
    at::Tensor tensor;  // as the reference gave it
    OutputKind kind = OutputKind::kOther;
    std::string name;
    double relative_l2_tolerance = 0.0;  // activations: the card's
    at::Tensor flat;                     // floating point: float, or double for a double output
    // Logits: rows of `vocab` values, each row's top-k (k = min(5, vocab)) by value with their
    // indices, and its largest magnitude (at least 1e-30).
    int64_t vocab = 0;
    int64_t top_k = 0;
    std::vector<double> top_values;
    std::vector<int64_t> top_indices;
    std::vector<double> scales;
  };
  const std::vector<Output>& outputs() const { return outputs_; }

 private:
  std::vector<Output> outputs_;
};

// Compares each output of a run with the reference's, by the card's output kinds: logits by
// top-1 agreement (positions whose reference margin is within the tolerance are ambiguous,
// not failures) and top-5 error; embeddings and hidden states by cosine similarity; every
// output also by max/mean absolute error, relative L2 and non-finite values. `passed` is the
// verdict over the outputs that have one.
OutputComparison compareOutputs(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& device, const ModelCard& card,
                                NumberFormat format, const VerdictSettings& settings);

// The same against a reference prepared once for many runs.
OutputComparison compareOutputs(const ReferenceOutputs& reference,
                                const std::vector<at::Tensor>& device, NumberFormat format,
                                const VerdictSettings& settings);

}  // namespace stickler
