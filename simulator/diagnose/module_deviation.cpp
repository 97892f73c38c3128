#include "simulator/diagnose/module_deviation.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <limits>

#include "simulator/graph/loaded_model.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json finiteOrNull(double value) {
  return std::isfinite(value) ? json(value) : json(nullptr);
}

}  // namespace

ModuleDeviation::ModuleDeviation(const LoadedModel& model, NumberFormat format,
                                 const ThresholdSettings& settings)
    : model_(model),
      format_(format),
      settings_(settings),
      thresholds_(moduleThresholds(model, format, settings)) {
  static std::atomic<int> next{0};
  directory_ = (fs::temp_directory_path() /
                ("stickler-lockstep-" + std::to_string(::getpid()) + "-" + std::to_string(next++)))
                   .string();
  fs::create_directories(directory_);
  comparer_ = std::make_unique<LockstepComparer>(*model.interpreter, model.example_inputs,
                                                 directory_ + "/errors.txt");
}

ModuleDeviation::~ModuleDeviation() {
  comparer_.reset();
  std::error_code ignored;
  fs::remove_all(directory_, ignored);
}

ExecutionObserver* ModuleDeviation::comparer() {
  return comparer_.get();
}

void ModuleDeviation::read() {
  comparer_.reset();  // joins the reference thread, flushes and closes the file
  errors_ = readModuleErrors(directory_ + "/errors.txt");
}

bool ModuleDeviation::over(const ModuleErrors& errors) const {
  return errors.non_finite ||
         errors.rel_l2 > thresholds_.threshold[static_cast<size_t>(errors.call)];
}

json ModuleDeviation::toJson() const {
  const auto& calls = model_.interpreter->moduleCalls();
  json modules = json::array();
  for (const ModuleErrors& errors : errors_) {
    const auto index = static_cast<size_t>(errors.call);
    const double emulated = thresholds_.emulated[index];
    modules.push_back({{"module", calls[index].path},
                       {"module_class", calls[index].class_name},
                       {"max_abs", finiteOrNull(errors.max_abs)},
                       {"mean_abs", finiteOrNull(errors.mean_abs)},
                       {"cosine", finiteOrNull(errors.cosine)},
                       {"rel_l2", finiteOrNull(errors.rel_l2)},
                       {"sqnr_db", finiteOrNull(errors.sqnr_db)},
                       {"non_finite", errors.non_finite},
                       {"emulated_rel_l2", emulated},
                       {"threshold", thresholds_.threshold[index]},
                       {"ratio_to_emulated", ratio(errors)},
                       {"over_threshold", over(errors)}});
  }
  return {{"thresholds",
           {{"metric", "rel_l2"},
            {"reference", "cpu"},
            {"emulated", "cpu-emulated:" + formatName(format_)},
            {"input_sets", settings_.inputs},
            {"percentile", settings_.percentile},
            {"margin", settings_.margin},
            {"floor", unitRoundoff(format_)},
            {"cache_key", thresholds_.cache_key},
            {"from_cache", thresholds_.from_cache}}},
          {"modules", modules}};
}

json ModuleDeviation::absorbed(const std::function<bool(const std::string& path)>& passes) const {
  // A deviation flows on: once a module is far off, every module after it is too. Each entry
  // is an onset (the first module over its threshold, or one whose error jumps an order of
  // magnitude past everything before it), with how many modules downstream carry it.
  constexpr double kOnsetJump = 10.0;
  const auto& calls = model_.interpreter->moduleCalls();
  json list = json::array();
  double largest_before = 0.0;
  for (const ModuleErrors& errors : errors_) {
    const double error =
        errors.non_finite ? std::numeric_limits<double>::infinity() : errors.rel_l2;
    const bool onset = list.empty() || error > kOnsetJump * largest_before;
    largest_before = std::max(largest_before, error);
    const ModuleCall& call = calls[static_cast<size_t>(errors.call)];
    if (!over(errors) || !passes(call.path)) continue;
    if (!onset) {
      list.back()["downstream_over_threshold"] =
          list.back()["downstream_over_threshold"].get<int64_t>() + 1;
      continue;
    }
    list.push_back({{"module", call.path},
                    {"module_class", call.class_name},
                    {"rel_l2", finiteOrNull(errors.rel_l2)},
                    {"threshold", thresholds_.threshold[static_cast<size_t>(errors.call)]},
                    {"ratio_to_emulated", ratio(errors)},
                    {"downstream_over_threshold", 0}});
  }
  return list;
}

json ModuleDeviation::errorsOf(const std::string& path) const {
  const auto& calls = model_.interpreter->moduleCalls();
  for (const ModuleErrors& errors : errors_) {
    if (calls[static_cast<size_t>(errors.call)].path != path) continue;
    return {{"rel_l2", finiteOrNull(errors.rel_l2)},
            {"threshold", thresholds_.threshold[static_cast<size_t>(errors.call)]},
            {"ratio_to_emulated", ratio(errors)},
            {"over_threshold", over(errors)}};
  }
  return nullptr;
}

json ModuleDeviation::ratio(const ModuleErrors& errors) const {
  const double emulated = thresholds_.emulated[static_cast<size_t>(errors.call)];
  return emulated > 0 ? finiteOrNull(errors.rel_l2 / emulated) : json(nullptr);
}

}  // namespace stickler
