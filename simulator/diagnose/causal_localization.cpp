#include "simulator/diagnose/causal_localization.h"

#include <cmath>
#include <cstring>
#include <map>

#include "simulator/backends/backend.h"
#include "simulator/compare/output_comparison.h"
#include "simulator/diagnose/causal_search.h"
#include "simulator/diagnose/module_deviation.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using nlohmann::json;

// One device run: which units were on the device and what the end-to-end verdict was.
struct Trial {
  RunVerdict verdict = RunVerdict::kFail;
  std::vector<at::Tensor> outputs;
  const torch::jit::Node* stopped_at = nullptr;  // where an aborted run died
  std::string message;
};

bool sameBytes(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor x = a[i].contiguous();
    const at::Tensor y = b[i].contiguous();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type() ||
        std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0) {
      return false;
    }
  }
  return true;
}

// A numerics diagnosis is named by what the model did: "passes", "fails", or the verdict
// that kept it from finishing ("aborted", "timed_out", "failed", "blocked").
std::string numericsStatus(RunVerdict verdict) {
  switch (verdict) {
    case RunVerdict::kPass:
      return "passes";
    case RunVerdict::kFail:
      return "fails";
    default:
      return runVerdictName(verdict);
  }
}

class Localizer {
 public:
  Localizer(const LoadedModel& model, const LocalizeOptions& options)
      : model_(model), options_(options), backend_(makeBackend(parseBackendSpec(options.backend))) {
    if (!(options.timeout_seconds > 0)) throw UserError("timeout_seconds must be positive");
    if (backend_->profile() == nullptr) {
      throw UserError(
          "localize needs a device backend (spyre-sim:<profile> or "
          "cpu-emulated:<format>), not " +
          options.backend);
    }
    reference_ = flattenTensors(model.example_outputs);
  }

  json run() {
    json report{
        {"schema", "stickler.localize"},
        {"version", 1},
        {"model", {{"path", model_.path}, {"sha256", model_.sha256}, {"name", model_.card.name}}},
        {"backend", options_.backend}};
    const auto whole = compileWhole();
    if (!whole->ok()) return blocked(report, *whole, "localization");
    collectUnits(whole->lowering());
    report["units"] = units_.size();
    const size_t applications = whole->lowering().pass_applications.size();
    report["device_run_target"] = options_.passes ? passTarget(applications) : target();

    // Determinism first: the same whole-model run twice, the first compared with the reference
    // module by module.
    deviation_ = std::make_unique<ModuleDeviation>(model_, backend_->format(), options_.thresholds);
    const Trial first = trial(units_, "whole model (determinism check, 1 of 2)", /*whole=*/true,
                              deviation_->comparer());
    deviation_->read();
    report["numerics"] = deviation_->toJson();
    const Trial second = trial(units_, "whole model (determinism check, 2 of 2)", /*whole=*/true);
    const bool deterministic =
        first.verdict == second.verdict &&
        (first.verdict == RunVerdict::kPass || first.verdict == RunVerdict::kFail
             ? sameBytes(first.outputs, second.outputs)
             : first.stopped_at == second.stopped_at);
    report["determinism"] = {{"runs", 2}, {"deterministic", deterministic}};
    report["whole_model_verdict"] = runVerdictName(first.verdict);
    if (!deterministic) {
      return finish(report, "nondeterministic",
                    std::string("two identical whole-model runs disagree (") +
                        runVerdictName(first.verdict) + ", " + runVerdictName(second.verdict) +
                        "): the device is nondeterministic here, and no layer "
                        "is blamed for it");
    }
    if (first.verdict == RunVerdict::kPass) {
      report["absorbed"] = deviation_->absorbed([](const std::string&) { return true; });
      const size_t absorbed = report["absorbed"].size();
      return finish(report, "passes",
                    "the model passes end to end on " + options_.backend + ": nothing to localize" +
                        (absorbed > 0 ? " (" + std::to_string(absorbed) +
                                            " deviation(s) over threshold absorbed downstream)"
                                      : std::string()));
    }

    if (options_.passes) return bisectPasses(report, whole->lowering(), first.verdict);

    std::vector<std::string> names;
    for (const std::string& unit : units_) names.push_back(displayPath(unit));
    const CausalFinding finding =
        causalSearch(names, [&](const std::vector<size_t>& indices, const std::string& label) {
          std::vector<std::string> units;
          units.reserve(indices.size());
          for (size_t index : indices) units.push_back(units_[index]);
          return trial(units, label).verdict;
        });
    const std::string& culprit = units_[finding.culprit];
    // The units before the first one the failure needs ran on the device in a passing run (the
    // bisection's last passing prefix): what deviates among them is absorbed downstream.
    const size_t clean =
        finding.kind == CausalFinding::Kind::kNeedsSeveral ? finding.first : finding.culprit;
    report["absorbed"] = deviation_->absorbed([&](const std::string& path) {
      bool holds_a_unit = false;
      for (size_t i = 0; i < units_.size(); ++i) {
        if (!isWithin(units_[i], path)) continue;
        if (i >= clean) return false;
        holds_a_unit = true;
      }
      return holds_a_unit;
    });
    report["culprit"] = unitToJson(finding.culprit);
    report["culprit"]["deviation"] = deviation_->errorsOf(culprit);
    report["confirmation"] = {{"alone_on_device", runVerdictName(finding.alone_verdict)},
                              {"everything_else_on_device", runVerdictName(finding.rest_verdict)},
                              {"confirmed", finding.kind == CausalFinding::Kind::kLocalized}};
    switch (finding.kind) {
      case CausalFinding::Kind::kNeedsSeveral: {
        json modules = json::array();
        for (size_t i = finding.first; i <= finding.culprit; ++i) modules.push_back(unitToJson(i));
        report["together"] = modules;
        return finish(report, "needs_several",
                      displayPath(culprit) + " fails the model only together with the " +
                          std::to_string(finding.culprit - finding.first) +
                          " module(s) before it, from " + displayPath(units_[finding.first]) +
                          ": no single module is the cause");
      }
      case CausalFinding::Kind::kWithOtherCauses:
        return finish(report, "localized_with_other_causes",
                      displayPath(culprit) +
                          " fails the model alone on the device, but the "
                          "model still " +
                          runVerdictVerb(finding.rest_verdict) +
                          " without it: another "
                          "module fails as well; run again with this one fixed or adapted");
      case CausalFinding::Kind::kLocalized:
        break;
    }
    return finish(report, "localized",
                  displayPath(culprit) + " (" + model_.modules.classOf(culprit) +
                      ") flips the end-to-end verdict: alone on the device the model " +
                      runVerdictVerb(finding.alone_verdict) +
                      ", and with only it on the CPU the model passes");
  }

  // One whole-model device run compared with the reference in lockstep: every module call's
  // error against its threshold, and the onsets of the deviations (absorbed when the model
  // passes, clues when it fails).
  json numerics() {
    json report{
        {"schema", "stickler.diagnose"},
        {"version", 1},
        {"mode", "numerics"},
        {"model", {{"path", model_.path}, {"sha256", model_.sha256}, {"name", model_.card.name}}},
        {"backend", options_.backend}};
    const auto whole = compileWhole();
    if (!whole->ok()) return blocked(report, *whole, "the numerics mode");
    collectUnits(whole->lowering());
    report["units"] = units_.size();
    deviation_ = std::make_unique<ModuleDeviation>(model_, backend_->format(), options_.thresholds);
    const Trial first =
        trial(units_, "whole model, compared in lockstep", /*whole=*/true, deviation_->comparer());
    deviation_->read();
    report["numerics"] = deviation_->toJson();
    report["whole_model_verdict"] = runVerdictName(first.verdict);
    const json onsets = deviation_->absorbed([](const std::string&) { return true; });
    if (first.verdict == RunVerdict::kPass) {
      report["absorbed"] = onsets;
      return finish(report, "passes",
                    "the model passes end to end on " + options_.backend +
                        (onsets.empty() ? std::string("; no module is over its threshold")
                                        : "; " + std::to_string(onsets.size()) +
                                              " deviation(s) over threshold absorbed downstream"));
    }
    report["deviations"] = onsets;
    std::string summary = std::string("the model ") + runVerdictVerb(first.verdict) +
                          " end to end on " + options_.backend;
    if (!onsets.empty()) {
      const json& onset = onsets.front();
      summary += "; the first module over its threshold is " +
                 displayPath(onset["module"].get<std::string>()) + " (" +
                 onset["module_class"].get<std::string>() + ")";
    } else {
      summary += "; no module is over its threshold before the end";
    }
    return finish(report, numericsStatus(first.verdict), summary);
  }

 private:
  // The whole model, but what adapters keep on the host.
  std::unique_ptr<CompiledModel> compileWhole() {
    Placement everything;
    everything.host_modules = model_.host_modules;
    return backend_->compile(model_, everything);
  }

  json blocked(json& report, const CompiledModel& whole, const std::string& what) {
    return finish(report, "blocked",
                  "the model does not compile on " + options_.backend + " (" +
                      std::to_string(whole.lowering().blockers.size()) + " blockers): " + what +
                      " needs a model that compiles");
  }

  // The modules whose own nodes run on the device, in the order their first node executes.
  void collectUnits(const LoweringResult& lowering) {
    for (const torch::jit::Node* node : allNodes(*model_.graph)) {
      const NodePlace place = lowering.placeOf(node);
      if (place != NodePlace::kDevice && place != NodePlace::kFallback) continue;
      const std::string path = modulePathOf(*node);
      if (!unit_ops_.count(path)) units_.push_back(path);
      ++unit_ops_[path][node->kind().toQualString()];
    }
  }

  // ceil(log2 M) bisection runs, two for determinism and two to confirm.
  int64_t target() const {
    return static_cast<int64_t>(std::ceil(std::log2(std::max<size_t>(units_.size(), 1)))) + 4;
  }

  // ceil(log2 A) bisection runs over A pass applications, two for determinism, one without
  // any pass.
  static int64_t passTarget(size_t applications) {
    return static_cast<int64_t>(std::ceil(std::log2(std::max<size_t>(applications, 1)))) + 3;
  }

  // The whole model with only the first N pass applications: the smallest N that fails names
  // the application that introduces the failure.
  json bisectPasses(json& report, const LoweringResult& whole, RunVerdict whole_model_verdict) {
    const size_t count = whole.pass_applications.size();
    report["pass_applications"] = count;
    if (count == 0) {
      return finish(report, "no_pass_applications",
                    "the lowering applies no passes to this model on " + options_.backend +
                        " (no fusion): no pass application can be the cause");
    }
    const std::string of = " of " + std::to_string(count) + " pass applications";
    if (trial(units_, "whole model, none" + of, true, nullptr, 0).verdict != RunVerdict::kPass) {
      return finish(report, "fails_without_passes",
                    "the model fails with no pass applied, so no pass introduces the failure");
    }
    size_t pass = 0, fail = count;  // the first `fail` applications fail; `pass` pass
    while (fail - pass > 1) {
      const size_t middle = pass + (fail - pass) / 2;
      const Trial probe = trial(units_, "whole model, the first " + std::to_string(middle) + of,
                                true, nullptr, static_cast<int64_t>(middle));
      (probe.verdict == RunVerdict::kPass ? pass : fail) = middle;
    }
    const PassApplication& culprit = whole.pass_applications[fail - 1];
    const std::string op = culprit.node->kind().toQualString();
    const std::string module = displayPath(modulePathOf(*culprit.node));
    const std::string into_op = culprit.into->kind().toQualString();
    const std::string into_module = displayPath(modulePathOf(*culprit.into));
    report["pass_culprit"] = {
        {"application", fail}, {"pass", culprit.pass}, {"op", op},
        {"module", module},    {"into_op", into_op},   {"into_module", into_module}};
    return finish(report, "pass_localized",
                  culprit.pass + " application " + std::to_string(fail) + of + " (" + op + " in " +
                      module + " into the kernel of " + into_op + " in " + into_module +
                      ") introduces the failure: with the applications before it "
                      "the model passes, with it the model " +
                      runVerdictVerb(whole_model_verdict));
  }

  Trial trial(const std::vector<std::string>& units, const std::string& what, bool whole = false,
              ExecutionObserver* observer = nullptr, int64_t pass_limit = -1) {
    options_.control.checkCancelled();
    options_.control.progress(static_cast<double>(runs_.size()), static_cast<double>(target()),
                              "device run: " + what);
    Placement placement;
    if (!whole) {
      placement.device_modules = units;
      placement.own_nodes_only = true;
    }
    placement.host_modules = model_.host_modules;
    Trial result;
    const auto compiled = backend_->compileWithPassLimit(model_, placement, pass_limit);
    if (!compiled->ok()) {
      result.verdict = RunVerdict::kBlocked;
    } else {
      RunOptions run_options;
      run_options.timeout_seconds = options_.timeout_seconds;
      run_options.cancelled = options_.control.cancelled;
      run_options.observer = observer;
      const BackendRun run = compiled->run(model_.example_inputs, run_options);
      options_.control.checkCancelled();
      if (run.status == BackendRun::Status::kCompleted) {
        result.outputs = flattenTensors(run.outputs);
        const bool passed =
            compareOutputs(reference_, result.outputs, model_.card, backend_->format(), {}).passed;
        result.verdict = passed ? RunVerdict::kPass : RunVerdict::kFail;
      } else {
        result.verdict = incompleteRunVerdict(run.status);
        result.stopped_at = run.node;
        result.message = run.message;
      }
    }
    runs_.push_back({{"device", what},
                     {"modules_on_device", whole ? units_.size() : units.size()},
                     {"verdict", runVerdictName(result.verdict)}});
    if (!result.message.empty()) runs_.back()["message"] = result.message;
    return result;
  }

  json unitToJson(size_t index) const {
    const std::string& path = units_[index];
    return {{"module", displayPath(path)},
            {"module_class", model_.modules.classOf(path)},
            {"position", index + 1},
            {"ops", unit_ops_.at(path)}};
  }

  json finish(json& report, const std::string& status, const std::string& summary) {
    report["status"] = status;
    report["summary"] = summary;
    report["runs"] = runs_;
    report["device_runs"] = runs_.size();
    return report;
  }

  const LoadedModel& model_;
  LocalizeOptions options_;
  std::unique_ptr<Backend> backend_;
  std::vector<at::Tensor> reference_;
  std::vector<std::string> units_;
  std::map<std::string, std::map<std::string, int64_t>> unit_ops_;
  json runs_ = json::array();
  std::unique_ptr<ModuleDeviation> deviation_;
};

}  // namespace

json localizeDivergence(const LoadedModel& model, const LocalizeOptions& options) {
  return Localizer(model, options).run();
}

json lockstepNumerics(const LoadedModel& model, const LocalizeOptions& options) {
  return Localizer(model, options).numerics();
}

}  // namespace stickler
