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

OutputMetrics commonMetrics(const at::Tensor& r, const at::Tensor& d) {
  return r.scalar_type() == c10::kDouble ? metricsAgainst(r.data_ptr<double>(), d)
                                         : metricsAgainst(r.data_ptr<float>(), d);
}

// The larger, NaN when either is (as ATen's amax).
double maxOrNan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

// The reference's top-k per row and largest magnitude, ranked in its own precision (exact).
void prepareLogits(ReferenceOutputs::Output& output) {
  output.vocab = output.tensor.dim() >= 1 ? output.tensor.size(-1) : 0;
  if (output.vocab == 0) return;
  const at::Tensor rows = output.flat.reshape({-1, output.vocab});
  output.top_k = std::min<int64_t>(5, output.vocab);
  auto [values, indices] = rows.topk(output.top_k, -1);
  const at::Tensor top = values.to(c10::kDouble).contiguous();
  const at::Tensor where = indices.contiguous();
  output.top_values.assign(top.data_ptr<double>(), top.data_ptr<double>() + top.numel());
  output.top_indices.assign(where.data_ptr<int64_t>(), where.data_ptr<int64_t>() + where.numel());
  const at::Tensor scales = rows.abs().amax(-1).to(c10::kDouble).contiguous();
  output.scales.assign(scales.data_ptr<double>(), scales.data_ptr<double>() + scales.numel());
  for (double& scale : output.scales) {
    if (!std::isnan(scale)) scale = std::max(scale, 1e-30);
  }
}

// One pass over the device's rows in C++: its top-1 (the first largest, NaN largest of all, as
// ATen's argmax) and its values at the reference's top-5, subtracted in float64.
template <typename D>
LogitAgreement logitMetrics(const ReferenceOutputs::Output& reference, const D* device,
                            double tolerance, bool* pass) {
  const int64_t vocab = reference.vocab;
  const int64_t k = reference.top_k;
  LogitAgreement agreement;
  agreement.positions = static_cast<int64_t>(reference.scales.size());
  agreement.tolerance = tolerance;
  double worst_top5 = 0.0;
  for (int64_t row = 0; row < agreement.positions; ++row) {
    const D* values = device + row * vocab;
    int64_t top1 = 0;
    for (int64_t i = 1; i < vocab && !std::isnan(values[top1]); ++i) {
      if (std::isnan(values[i]) || values[i] > values[top1]) top1 = i;
    }
    const double* top = reference.top_values.data() + row * k;
    const int64_t* top_index = reference.top_indices.data() + row * k;
    double worst = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      worst = maxOrNan(worst, std::fabs(static_cast<double>(values[top_index[j]]) - top[j]));
    }
    const double row_scale = reference.scales[row];
    worst_top5 = std::max(worst_top5, worst / row_scale);
    if (top1 == top_index[0]) {
      ++agreement.top1_agree;
      continue;
    }
    const double margin = vocab > 1 ? top[0] - top[1] : 0.0;
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

ReferenceOutputs::ReferenceOutputs(const std::vector<at::Tensor>& reference,
                                   const ModelCard& card) {
  outputs_.reserve(reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    const bool named = i < card.outputs.size();
    Output output;
    output.tensor = reference[i];
    output.kind = named ? card.outputs[i].kind : OutputKind::kOther;
    output.name = named ? card.outputs[i].name : "output." + std::to_string(i);
    if (named) output.relative_l2_tolerance = card.outputs[i].relative_l2_tolerance;
    if (reference[i].is_floating_point()) {
      output.flat = flatForReading(reference[i]);
      if (output.kind == OutputKind::kLogits) prepareLogits(output);
    }
    outputs_.push_back(std::move(output));
  }
}

OutputComparison compareOutputs(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& device, const ModelCard& card,
                                NumberFormat format, const VerdictSettings& settings) {
  return compareOutputs(ReferenceOutputs(reference, card), device, format, settings);
}

OutputComparison compareOutputs(const ReferenceOutputs& reference,
                                const std::vector<at::Tensor>& device, NumberFormat format,
                                const VerdictSettings& settings) {
  OutputComparison comparison;
  const std::vector<ReferenceOutputs::Output>& outputs = reference.outputs();
  bool all_pass = outputs.size() == device.size();
  const size_t count = std::min(outputs.size(), device.size());
  for (size_t i = 0; i < count; ++i) {
    const ReferenceOutputs::Output& expected = outputs[i];
    OutputReport entry;
    entry.kind = expected.kind;
    entry.name = expected.name;
    entry.shape = expected.tensor.sizes().vec();
    if (expected.tensor.sizes() != device[i].sizes()) {
      entry.verdict = OutputVerdict::kFail;
      entry.reason = "the device output has shape " + shapeString(device[i].sizes().vec());
      all_pass = false;
      comparison.outputs.push_back(std::move(entry));
      continue;
    }
    if (!expected.tensor.is_floating_point()) {
      entry.equal = at::equal(expected.tensor, device[i].to(expected.tensor.scalar_type()));
      comparison.outputs.push_back(std::move(entry));
      continue;
    }
    const at::Tensor flat = flatForReading(device[i]);
    const OutputMetrics metrics = commonMetrics(expected.flat, flat);
    entry.metrics = metrics;
    bool pass = true;
    if (entry.kind == OutputKind::kLogits && expected.vocab > 0) {
      bool logits_pass = true;
      const double tolerance = logitTolerance(format, settings);
      entry.logits = flat.scalar_type() == c10::kDouble
                         ? logitMetrics(expected, flat.data_ptr<double>(), tolerance, &logits_pass)
                         : logitMetrics(expected, flat.data_ptr<float>(), tolerance, &logits_pass);
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
      const double tolerance = expected.relative_l2_tolerance;
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
