#include "simulator/diagnose/module_thresholds.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "simulator/backends/backend.h"
#include "simulator/compare/module_errors.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/resource_dirs.h"
#include "simulator/support/sha256.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string cacheKey(const LoadedModel& model, NumberFormat format,
                     const ThresholdSettings& settings) {
  const json key = {{"archive", model.sha256},
                    {"inputs", modelCardToJson(model.card)["inputs"]},
                    {"format", formatName(format)},
                    {"input_sets", settings.inputs},
                    {"percentile", settings.percentile},
                    {"margin", settings.margin},
                    {"version", 1}};
  return sha256Bytes(key.dump());
}

// The inputs of the i-th set: the example inputs, then fresh draws from the card.
std::vector<c10::IValue> inputSet(const LoadedModel& model, int index) {
  if (index == 0) return model.example_inputs;
  return makeExampleInputs(model.card.inputs,
                           model.module.get_method("forward").function().getSchema(),
                           1000 + static_cast<uint64_t>(index), model.captured_inputs);
}

double nearestRank(std::vector<double> values, double percentile) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(percentile * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<size_t>(rank, 1)) - 1];
}

ModuleThresholds derive(const LoadedModel& model, NumberFormat format,
                        const ThresholdSettings& settings) {
  const auto& calls = model.interpreter->moduleCalls();
  std::vector<std::vector<double>> errors(calls.size());
  const auto backend = makeBackend(parseBackendSpec("cpu-emulated:" + formatName(format)));
  const auto compiled = backend->compile(model, {});
  for (int i = 0; i < settings.inputs; ++i) {
    const std::vector<c10::IValue> inputs = inputSet(model, i);
    LockstepComparer comparer(*model.interpreter, inputs);
    RunOptions options;
    options.observer = &comparer;
    options.in_process = true;
    compiled->run(inputs, options);
    for (const ModuleErrors& entry : comparer.record().modules) {
      errors[entry.call].push_back(entry.rel_l2);
    }
  }
  ModuleThresholds thresholds;
  const double floor = unitRoundoff(format);
  for (const auto& values : errors) {
    const double emulated = nearestRank(values, settings.percentile);
    // JSON has no infinity: an emulated run that overflows gets a bound nothing exceeds.
    thresholds.emulated.push_back(std::isfinite(emulated) ? emulated : 1e300);
    thresholds.threshold.push_back(
        std::isfinite(emulated) ? std::max(settings.margin * emulated, floor) : 1e300);
  }
  return thresholds;
}

}  // namespace

std::string goldenCacheDir() {
  return cacheDir("golden");
}

namespace {

ModuleThresholds cachedOrDerived(const LoadedModel& model, NumberFormat format,
                                 const ThresholdSettings& settings, const std::string& key) {
  const fs::path file = fs::path(goldenCacheDir()) / (key + ".json");
  const size_t calls = model.interpreter->moduleCalls().size();
  std::ifstream in(file);
  if (in) {
    try {
      const json cached = json::parse(in);
      ModuleThresholds thresholds;
      thresholds.emulated = cached.at("emulated").get<std::vector<double>>();
      thresholds.threshold = cached.at("threshold").get<std::vector<double>>();
      thresholds.cache_key = key;
      thresholds.from_cache = true;
      if (thresholds.threshold.size() == calls && thresholds.emulated.size() == calls) {
        return thresholds;
      }
    } catch (const json::exception&) {
      // A damaged cache entry is derived again and rewritten.
    }
  }
  const double start = phaseClock();
  ModuleThresholds thresholds = derive(model, format, settings);
  notePhase("derived module thresholds from " + std::to_string(settings.inputs) +
                " emulated runs (none cached)",
            phaseClock() - start);
  thresholds.cache_key = key;
  std::error_code ignored;
  fs::create_directories(file.parent_path(), ignored);
  // Per process and per write: two processes, or two threads of a server, deriving the same
  // entry at once must not write into one file.
  static std::atomic<unsigned long> writes{0};
  const fs::path partial = file.string() + ".partial-" + std::to_string(::getpid()) + "-" +
                           std::to_string(writes.fetch_add(1));
  {
    std::ofstream out(partial);
    out << json{{"emulated", thresholds.emulated}, {"threshold", thresholds.threshold}}.dump();
  }
  fs::rename(partial, file, ignored);  // readers see a whole entry or none
  return thresholds;
}

}  // namespace

ModuleThresholds moduleThresholds(const LoadedModel& model, NumberFormat format,
                                  const ThresholdSettings& settings) {
  // Kept with the model too: a session localizes one model again and again, and reading the
  // cache file took as long as a small model's device run.
  bool made = false;
  const std::string key = cacheKey(model, format, settings);
  ModuleThresholds thresholds = *model.memo.get<ModuleThresholds>("module thresholds " + key, [&] {
    made = true;
    return std::make_shared<ModuleThresholds>(cachedOrDerived(model, format, settings, key));
  });
  if (!made) thresholds.from_cache = true;  // derived before, if not read from the file
  return thresholds;
}

}  // namespace stickler
