#include "simulator/diagnose/module_deviation.h"

#include <cmath>
#include <limits>
#include <unordered_map>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/node_info.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

std::optional<double> finiteOrNone(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

}  // namespace

ModuleDeviation::ModuleDeviation(const LoadedModel& model, NumberFormat format,
                                 const ThresholdSettings& settings)
    : model_(model),
      format_(format),
      settings_(settings),
      thresholds_(moduleThresholds(model, format, settings)) {}

void ModuleDeviation::take(const LockstepRecord& record) {
  errors_ = record.modules;
  non_finite_ = nonFiniteCandidates(record, *model_.graph);
}

namespace {

// Whether the reference's results at the candidates are non-finite the same way.
class ReferenceFiniteness : public ExecutionObserver {
 public:
  explicit ReferenceFiniteness(const std::vector<NonFiniteCandidate>& candidates) {
    for (const NonFiniteCandidate& candidate : candidates) wanted_[candidate.node] = candidate.nan;
  }
  void onNode(const torch::jit::Node& node, const ModuleCall* /*module*/,
              const ValueView& /*inputs*/, const MutableValueView& outputs) override {
    auto found = wanted_.find(&node);
    if (found == wanted_.end() || seen_.count(&node)) return;  // its first run is the one noted
    bool same = false;
    for (size_t i = 0; i < outputs.size() && !same; ++i) {
      if (!outputs[i].isTensor()) continue;
      const at::Tensor& tensor = outputs[i].toTensor();
      if (!tensor.defined() || !at::isFloatingType(tensor.scalar_type())) continue;
      same = found->second ? tensor.isnan().any().item<bool>()
                           : tensor.isfinite().logical_not().any().item<bool>();
    }
    seen_[&node] = same;
  }
  bool sameInReference(const torch::jit::Node* node) const {
    auto found = seen_.find(node);
    return found == seen_.end() || found->second;  // never reached: no claim against it
  }

 private:
  std::unordered_map<const torch::jit::Node*, bool> wanted_;
  std::unordered_map<const torch::jit::Node*, bool> seen_;
};

}  // namespace

std::optional<FirstNonFinite> ModuleDeviation::firstNonFinite() const {
  if (non_finite_.empty()) return std::nullopt;
  ReferenceFiniteness reference(non_finite_);
  try {
    model_.interpreter->run(model_.example_inputs, &reference);
  } catch (const UserError&) {
    return std::nullopt;  // a reference that does not run names nothing
  }
  for (const NonFiniteCandidate& candidate : non_finite_) {
    if (reference.sameInReference(candidate.node)) continue;
    const std::string module = modulePathOf(*candidate.node);
    return FirstNonFinite{candidate.node->kind().toQualString(), module.empty() ? "(root)" : module,
                          describeNode(*candidate.node, model_.modules),
                          candidate.nan ? "NaN" : "inf", candidate.elements};
  }
  return std::nullopt;
}

bool ModuleDeviation::over(const ModuleErrors& errors) const {
  return errors.non_finite ||
         errors.rel_l2 > thresholds_.threshold[static_cast<size_t>(errors.call)];
}

NumericsReport ModuleDeviation::report() const {
  const auto& calls = model_.interpreter->moduleCalls();
  NumericsReport report;
  for (const ModuleErrors& errors : errors_) {
    const auto index = static_cast<size_t>(errors.call);
    ModuleCallDeviation call;
    call.module = calls[index].path;
    call.module_class = calls[index].class_name;
    call.max_abs = finiteOrNone(errors.max_abs);
    call.mean_abs = finiteOrNone(errors.mean_abs);
    call.cosine = finiteOrNone(errors.cosine);
    call.rel_l2 = finiteOrNone(errors.rel_l2);
    call.sqnr_db = finiteOrNone(errors.sqnr_db);
    call.non_finite = errors.non_finite;
    call.emulated_rel_l2 = thresholds_.emulated[index];
    call.threshold = thresholds_.threshold[index];
    call.ratio_to_emulated = ratio(errors);
    call.over_threshold = over(errors);
    report.modules.push_back(std::move(call));
  }
  report.thresholds = {"cpu-emulated:" + formatName(format_),
                       settings_.inputs,
                       settings_.percentile,
                       settings_.margin,
                       unitRoundoff(format_),
                       thresholds_.cache_key,
                       thresholds_.from_cache};
  return report;
}

std::vector<DeviationOnset> ModuleDeviation::absorbed(
    const std::function<bool(const std::string& path)>& passes) const {
  // A deviation flows on: once a module is far off, every module after it is too. Each entry
  // is an onset (the first module over its threshold, or one whose error jumps an order of
  // magnitude past everything before it), with how many modules downstream carry it.
  constexpr double kOnsetJump = 10.0;
  const auto& calls = model_.interpreter->moduleCalls();
  // An onset `passes` leaves out (a cause) takes its carriers with it: a module downstream of a
  // cause is not an onset of its own.
  std::vector<DeviationOnset> list;
  double largest_before = 0.0;
  bool any_over = false, onset_listed = false;
  for (const ModuleErrors& errors : errors_) {
    const double error =
        errors.non_finite ? std::numeric_limits<double>::infinity() : errors.rel_l2;
    const bool onset = !any_over || error > kOnsetJump * largest_before;
    largest_before = std::max(largest_before, error);
    if (!over(errors)) continue;
    any_over = true;
    const ModuleCall& call = calls[static_cast<size_t>(errors.call)];
    const bool kept = passes(call.path);
    if (onset) {
      onset_listed = kept;
      if (kept) {
        list.push_back({call.path, call.class_name, finiteOrNone(errors.rel_l2),
                        thresholds_.threshold[static_cast<size_t>(errors.call)], ratio(errors), 0});
      }
    } else if (onset_listed && kept) {
      ++list.back().downstream_over_threshold;
    }
  }
  return list;
}

std::optional<UnitDeviation> ModuleDeviation::errorsOf(const std::string& path) const {
  const auto& calls = model_.interpreter->moduleCalls();
  for (const ModuleErrors& errors : errors_) {
    if (calls[static_cast<size_t>(errors.call)].path != path) continue;
    return UnitDeviation{finiteOrNone(errors.rel_l2),
                         thresholds_.threshold[static_cast<size_t>(errors.call)], ratio(errors),
                         over(errors)};
  }
  return std::nullopt;
}

std::optional<double> ModuleDeviation::ratio(const ModuleErrors& errors) const {
  const double emulated = thresholds_.emulated[static_cast<size_t>(errors.call)];
  return emulated > 0 ? finiteOrNone(errors.rel_l2 / emulated) : std::nullopt;
}

}  // namespace stickler
