#include "simulator/compare/output_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stickler {

namespace {

std::optional<double> finiteOrNone(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

// Read as float when float holds every value exactly (fp32, bf16, fp16), as double otherwise:
// a float64 copy of a large output (logits over a vocabulary) costs more than comparing it.
at::Tensor flatForReading(const at::Tensor& tensor) {
  const c10::ScalarType type = tensor.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
  return tensor.to(type).contiguous().reshape({-1});
}

// One pass in C++ over both outputs, summed in float64 in order: a dozen whole-tensor
// operators, each a pass and a read back, cost more than the comparison itself on a small
// model's outputs, and a serial sum is the same on every machine.
template <typename R, typename D>
OutputMetrics metricsOf(const R* ref, const D* dev, int64_t count) {
  double ref_squares = 0, dev_squares = 0, dot = 0, error_squares = 0, error_sum = 0;
  double error_max = 0;
  bool error_nan = false;
  int64_t non_finite = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double r = ref[i];
    const double d = dev[i];
    if (!std::isfinite(d)) ++non_finite;
    const double error = std::fabs(d - r);
    if (std::isnan(error)) {
      error_nan = true;
    } else {
      error_max = std::max(error_max, error);
    }
    error_sum += error;
    error_squares += error * error;
    ref_squares += r * r;
    dev_squares += d * d;
    dot += r * d;
  }
  const double ref_norm = std::sqrt(ref_squares);
  const double dev_norm = std::sqrt(dev_squares);
  OutputMetrics metrics;
  metrics.non_finite = non_finite;
  metrics.max_abs_error = error_nan || count == 0 ? std::nullopt : finiteOrNone(error_max);
  metrics.mean_abs_error = finiteOrNone(error_sum / static_cast<double>(count));
  metrics.relative_l2 = finiteOrNone(ref_norm > 0 ? std::sqrt(error_squares) / ref_norm : 0.0);
  metrics.cosine = finiteOrNone(ref_norm > 0 && dev_norm > 0 ? dot / (ref_norm * dev_norm)
                                                             : (ref_norm == dev_norm ? 1.0 : 0.0));
  return metrics;
}

template <typename R>
OutputMetrics metricsAgainst(const R* ref, const at::Tensor& d) {
  return d.scalar_type() == c10::kDouble ? metricsOf(ref, d.data_ptr<double>(), d.numel())
                                         : metricsOf(ref, d.data_ptr<float>(), d.numel());
}

OutputMetrics commonMetrics(const at::Tensor& reference, const at::Tensor& device) {
  const at::Tensor r = flatForReading(reference);
  const at::Tensor d = flatForReading(device);
  return r.scalar_type() == c10::kDouble ? metricsAgainst(r.data_ptr<double>(), d)
                                         : metricsAgainst(r.data_ptr<float>(), d);
}

LogitAgreement logitMetrics(const at::Tensor& reference, const at::Tensor& device, double tolerance,
                            bool* pass) {
  // Whole-tensor operations, then one pass over the rows in C++: a row at a time in ATen costs
  // several small operators per position, which dominated a localization trial's comparison.
  // Ranking, maxima and gathering are exact in the outputs' own precision; only the few
  // gathered values are subtracted, in float64.
  const int64_t vocab = reference.size(-1);
  const c10::ScalarType type =
      reference.scalar_type() == c10::kDouble || device.scalar_type() == c10::kDouble ? c10::kDouble
                                                                                      : c10::kFloat;
  const at::Tensor r = reference.to(type).reshape({-1, vocab});
  const at::Tensor d = device.to(type).reshape({-1, vocab});
  auto [top_reference, top_indices] = r.topk(std::min<int64_t>(5, vocab), -1);
  const at::Tensor top_values = top_reference.to(c10::kDouble).contiguous();
  top_indices = top_indices.contiguous();
  const at::Tensor worst =
      (d.gather(1, top_indices).to(c10::kDouble) - top_values).abs().amax(-1).contiguous();
  const at::Tensor scale = r.abs().amax(-1).to(c10::kDouble).clamp_min(1e-30).contiguous();
  const at::Tensor dev_top1 = d.argmax(-1).contiguous();
  const auto values = top_values.accessor<double, 2>();
  const auto indices = top_indices.accessor<int64_t, 2>();
  const auto worst_of = worst.accessor<double, 1>();
  const auto scale_of = scale.accessor<double, 1>();
  const auto dev_top1_of = dev_top1.accessor<int64_t, 1>();
  LogitAgreement agreement;
  agreement.positions = r.size(0);
  agreement.tolerance = tolerance;
  double worst_top5 = 0.0;
  for (int64_t row = 0; row < r.size(0); ++row) {
    const double row_scale = scale_of[row];
    worst_top5 = std::max(worst_top5, worst_of[row] / row_scale);
    if (dev_top1_of[row] == indices[row][0]) {
      ++agreement.top1_agree;
      continue;
    }
    const double margin = vocab > 1 ? values[row][0] - values[row][1] : 0.0;
    (margin <= tolerance * row_scale ? agreement.top1_ambiguous : agreement.top1_disagree)++;
  }
  if (!std::isfinite(worst_top5)) worst_top5 = std::numeric_limits<double>::infinity();
  *pass = agreement.top1_disagree == 0 && worst_top5 <= tolerance;
  agreement.top5_relative_error = finiteOrNone(worst_top5);
  return agreement;
}

}  // namespace

double logitTolerance(NumberFormat format, const VerdictSettings& settings) {
  return std::max(settings.logit_roundoffs * unitRoundoff(format), settings.min_logit_tolerance);
}

OutputComparison compareOutputs(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& device, const ModelCard& card,
                                NumberFormat format, const VerdictSettings& settings) {
  OutputComparison comparison;
  bool all_pass = reference.size() == device.size();
  const size_t count = std::min(reference.size(), device.size());
  for (size_t i = 0; i < count; ++i) {
    const bool named = i < card.outputs.size();
    OutputReport entry;
    entry.kind = named ? card.outputs[i].kind : OutputKind::kOther;
    entry.name = named ? card.outputs[i].name : "output." + std::to_string(i);
    entry.shape = reference[i].sizes().vec();
    if (reference[i].sizes() != device[i].sizes()) {
      entry.verdict = OutputVerdict::kFail;
      entry.reason = "the device output has shape " + shapeString(device[i].sizes().vec());
      all_pass = false;
      comparison.outputs.push_back(std::move(entry));
      continue;
    }
    if (!reference[i].is_floating_point()) {
      entry.equal = at::equal(reference[i], device[i].to(reference[i].scalar_type()));
      comparison.outputs.push_back(std::move(entry));
      continue;
    }
    const OutputMetrics metrics = commonMetrics(reference[i], device[i]);
    entry.metrics = metrics;
    bool pass = true;
    if (entry.kind == OutputKind::kLogits && reference[i].dim() >= 1) {
      bool logits_pass = true;
      entry.logits =
          logitMetrics(reference[i], device[i], logitTolerance(format, settings), &logits_pass);
      pass = logits_pass && metrics.non_finite == 0;
      if (!pass) {
        entry.reason = entry.logits->top1_disagree > 0
                           ? "top-1 differs at positions where the reference is clear"
                           : "top-5 logit error beyond the tolerance";
      }
    } else if (entry.kind == OutputKind::kEmbeddings || entry.kind == OutputKind::kHiddenStates) {
      pass = metrics.cosine.value_or(-1.0) >= settings.embedding_cosine && metrics.non_finite == 0;
      if (!pass) {
        entry.reason = "cosine similarity below " + std::to_string(settings.embedding_cosine);
      }
    } else if (entry.kind == OutputKind::kActivation) {
      const double tolerance = card.outputs[i].relative_l2_tolerance;
      entry.relative_l2_tolerance = tolerance;
      pass = metrics.relative_l2.has_value() && *metrics.relative_l2 <= tolerance &&
             metrics.non_finite == 0;
      if (!pass) entry.reason = "relative L2 error beyond the card's tolerance";
    } else {
      entry.verdict = OutputVerdict::kNone;
      comparison.outputs.push_back(std::move(entry));
      continue;
    }
    if (!pass && metrics.non_finite > 0) entry.reason = "non-finite values on the device";
    entry.verdict = pass ? OutputVerdict::kPass : OutputVerdict::kFail;
    all_pass = all_pass && pass;
    comparison.outputs.push_back(std::move(entry));
  }
  comparison.passed = all_pass;
  return comparison;
}

}  // namespace stickler
