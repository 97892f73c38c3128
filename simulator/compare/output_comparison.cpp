#include "simulator/compare/output_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stickler {

namespace {

std::optional<double> finiteOrNone(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

OutputMetrics commonMetrics(const at::Tensor& reference, const at::Tensor& device) {
  const at::Tensor r = reference.to(c10::kDouble).reshape({-1});
  const at::Tensor d = device.to(c10::kDouble).reshape({-1});
  const at::Tensor finite = at::isfinite(d);
  const at::Tensor diff = (d - r).abs();
  const double ref_norm = r.norm().item<double>();
  const double dev_norm = d.norm().item<double>();
  const double dot = (r * d).sum().item<double>();
  OutputMetrics metrics;
  metrics.non_finite = d.numel() - finite.sum().item<int64_t>();
  metrics.max_abs_error = finiteOrNone(diff.max().item<double>());
  metrics.mean_abs_error = finiteOrNone(diff.mean().item<double>());
  metrics.relative_l2 = finiteOrNone(ref_norm > 0 ? (d - r).norm().item<double>() / ref_norm : 0.0);
  metrics.cosine = finiteOrNone(ref_norm > 0 && dev_norm > 0 ? dot / (ref_norm * dev_norm)
                                                             : (ref_norm == dev_norm ? 1.0 : 0.0));
  return metrics;
}

LogitAgreement logitMetrics(const at::Tensor& reference, const at::Tensor& device, double tolerance,
                            bool* pass) {
  const int64_t vocab = reference.size(-1);
  const at::Tensor r = reference.to(c10::kDouble).reshape({-1, vocab});
  const at::Tensor d = device.to(c10::kDouble).reshape({-1, vocab});
  const int64_t k = std::min<int64_t>(5, vocab);
  const auto [ref_top, ref_index] = r.topk(std::min<int64_t>(2, vocab), -1);
  const at::Tensor dev_top1 = d.argmax(-1);
  const at::Tensor top5 = std::get<1>(r.topk(k, -1));
  const at::Tensor scale = r.abs().amax(-1).clamp_min(1e-30);
  LogitAgreement agreement;
  agreement.positions = r.size(0);
  agreement.tolerance = tolerance;
  double worst_top5 = 0.0;
  for (int64_t row = 0; row < r.size(0); ++row) {
    const double row_scale = scale[row].item<double>();
    const at::Tensor err =
        (d[row].index_select(0, top5[row]) - r[row].index_select(0, top5[row])).abs();
    worst_top5 = std::max(worst_top5, err.max().item<double>() / row_scale);
    if (dev_top1[row].item<int64_t>() == ref_index[row][0].item<int64_t>()) {
      ++agreement.top1_agree;
      continue;
    }
    const double margin =
        vocab > 1 ? ref_top[row][0].item<double>() - ref_top[row][1].item<double>() : 0.0;
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
