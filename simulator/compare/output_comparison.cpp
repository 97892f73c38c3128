#include "simulator/compare/output_comparison.h"

#include <algorithm>
#include <cmath>

namespace stickler {

using nlohmann::json;

namespace {

json commonMetrics(const at::Tensor& reference, const at::Tensor& device) {
  const at::Tensor r = reference.to(c10::kDouble).reshape({-1});
  const at::Tensor d = device.to(c10::kDouble).reshape({-1});
  const at::Tensor finite = at::isfinite(d);
  const int64_t non_finite = d.numel() - finite.sum().item<int64_t>();
  const at::Tensor diff = (d - r).abs();
  const double ref_norm = r.norm().item<double>();
  const double dev_norm = d.norm().item<double>();
  const double dot = (r * d).sum().item<double>();
  json metrics{{"non_finite", non_finite}};
  metrics["max_abs_error"] = diff.max().item<double>();
  metrics["mean_abs_error"] = diff.mean().item<double>();
  metrics["relative_l2"] = ref_norm > 0 ? (d - r).norm().item<double>() / ref_norm : 0.0;
  metrics["cosine"] = ref_norm > 0 && dev_norm > 0 ? dot / (ref_norm * dev_norm)
                                                   : (ref_norm == dev_norm ? 1.0 : 0.0);
  for (const char* key : {"max_abs_error", "mean_abs_error", "relative_l2", "cosine"}) {
    if (!std::isfinite(metrics[key].get<double>())) metrics[key] = nullptr;
  }
  return metrics;
}

json logitMetrics(const at::Tensor& reference, const at::Tensor& device, double tolerance,
                  bool* pass) {
  const int64_t vocab = reference.size(-1);
  const at::Tensor r = reference.to(c10::kDouble).reshape({-1, vocab});
  const at::Tensor d = device.to(c10::kDouble).reshape({-1, vocab});
  const int64_t k = std::min<int64_t>(5, vocab);
  const auto [ref_top, ref_index] = r.topk(std::min<int64_t>(2, vocab), -1);
  const at::Tensor dev_top1 = d.argmax(-1);
  const at::Tensor top5 = std::get<1>(r.topk(k, -1));
  const at::Tensor scale = r.abs().amax(-1).clamp_min(1e-30);
  int64_t agree = 0, ambiguous = 0, disagree = 0;
  double worst_top5 = 0.0;
  for (int64_t row = 0; row < r.size(0); ++row) {
    const double row_scale = scale[row].item<double>();
    const at::Tensor err =
        (d[row].index_select(0, top5[row]) - r[row].index_select(0, top5[row])).abs();
    worst_top5 = std::max(worst_top5, err.max().item<double>() / row_scale);
    if (dev_top1[row].item<int64_t>() == ref_index[row][0].item<int64_t>()) {
      ++agree;
      continue;
    }
    const double margin =
        vocab > 1 ? ref_top[row][0].item<double>() - ref_top[row][1].item<double>() : 0.0;
    (margin <= tolerance * row_scale ? ambiguous : disagree)++;
  }
  if (!std::isfinite(worst_top5)) worst_top5 = std::numeric_limits<double>::infinity();
  *pass = disagree == 0 && worst_top5 <= tolerance;
  return {{"positions", r.size(0)},
          {"top1_agree", agree},
          {"top1_ambiguous", ambiguous},
          {"top1_disagree", disagree},
          {"top5_relative_error", std::isfinite(worst_top5) ? json(worst_top5) : json(nullptr)},
          {"tolerance", tolerance}};
}

}  // namespace

double logitTolerance(NumberFormat format, const VerdictSettings& settings) {
  return std::max(settings.logit_roundoffs * unitRoundoff(format), settings.min_logit_tolerance);
}

json compareOutputs(const std::vector<at::Tensor>& reference, const std::vector<at::Tensor>& device,
                    const ModelCard& card, NumberFormat format, const VerdictSettings& settings,
                    bool* passed) {
  json outputs = json::array();
  bool all_pass = true;
  const size_t count = std::min(reference.size(), device.size());
  if (reference.size() != device.size()) all_pass = false;
  for (size_t i = 0; i < count; ++i) {
    const bool named = i < card.outputs.size();
    const OutputKind kind = named ? card.outputs[i].kind : OutputKind::kOther;
    json entry{{"name", named ? card.outputs[i].name : "output." + std::to_string(i)},
               {"kind", outputKindName(kind)},
               {"shape", reference[i].sizes().vec()}};
    if (reference[i].sizes() != device[i].sizes()) {
      entry["verdict"] = "fail";
      entry["reason"] = "the device output has shape " + shapeString(device[i].sizes().vec());
      all_pass = false;
      outputs.push_back(entry);
      continue;
    }
    if (!reference[i].is_floating_point()) {
      const bool equal = at::equal(reference[i], device[i].to(reference[i].scalar_type()));
      entry["equal"] = equal;
      outputs.push_back(entry);
      continue;
    }
    entry.update(commonMetrics(reference[i], device[i]));
    bool pass = true;
    std::string reason;
    if (kind == OutputKind::kLogits && reference[i].dim() >= 1) {
      bool logits_pass = true;
      entry["logits"] =
          logitMetrics(reference[i], device[i], logitTolerance(format, settings), &logits_pass);
      pass = logits_pass && entry["non_finite"] == 0;
      if (!pass) {
        reason = entry["logits"]["top1_disagree"].get<int64_t>() > 0
                     ? "top-1 differs at positions where the reference is clear"
                     : "top-5 logit error beyond the tolerance";
      }
    } else if (kind == OutputKind::kEmbeddings || kind == OutputKind::kHiddenStates) {
      const double cosine = entry["cosine"].is_null() ? -1.0 : entry["cosine"].get<double>();
      pass = cosine >= settings.embedding_cosine && entry["non_finite"] == 0;
      if (!pass) reason = "cosine similarity below " + std::to_string(settings.embedding_cosine);
    } else {
      entry["verdict"] = "none";  // informative only
      outputs.push_back(entry);
      continue;
    }
    if (!pass && entry["non_finite"].get<int64_t>() > 0) reason = "non-finite values on the device";
    entry["verdict"] = pass ? "pass" : "fail";
    if (!pass) entry["reason"] = reason;
    all_pass = all_pass && pass;
    outputs.push_back(entry);
  }
  *passed = all_pass;
  return outputs;
}

}  // namespace stickler
