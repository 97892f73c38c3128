#include "simulator/diagnose/causal_localization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "simulator/backends/backend.h"
#include "simulator/backends/model_host_client.h"
#include "simulator/compare/output_comparison.h"
#include "simulator/diagnose/causal_search.h"
#include "simulator/diagnose/localization_units.h"
#include "simulator/diagnose/module_deviation.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/node_info.h"
#include "simulator/support/errors.h"
#include "simulator/support/phase_times.h"

namespace stickler {
namespace {

// One device run: which units were on the device and what the end-to-end verdict was.
struct Trial {
  RunVerdict verdict = RunVerdict::kFail;
  std::vector<at::Tensor> outputs;
  const torch::jit::Node* stopped_at = nullptr;  // where an aborted run died
  std::string message;
  LockstepRecord lockstep;  // when compared in lockstep
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

// A numerics diagnosis is named by what the model did: it passes, fails, or the verdict that
// kept it from finishing.
LocalizeStatus numericsStatus(RunVerdict verdict) {
  switch (verdict) {
    case RunVerdict::kPass:
      return LocalizeStatus::kPasses;
    case RunVerdict::kFail:
      return LocalizeStatus::kFails;
    case RunVerdict::kBlocked:
      return LocalizeStatus::kBlocked;
    case RunVerdict::kAborted:
      return LocalizeStatus::kAborted;
    case RunVerdict::kTimedOut:
      return LocalizeStatus::kTimedOut;
    case RunVerdict::kFailed:
      return LocalizeStatus::kFailed;
  }
  return LocalizeStatus::kFails;
}

// ceil(log2 M) bisection runs over M units, two for determinism and two to confirm.
int64_t singleCauseTarget(int64_t units) {
  return static_cast<int64_t>(std::ceil(std::log2(std::max<int64_t>(units, 1)))) + 4;
}

// The whole model lowered for a device and, when it compiles, its units.
struct WholeModel {
  std::unique_ptr<CompiledModel> compiled;
  LocalizationUnits units;
};

class Localizer {
 public:
  Localizer(const LoadedModel& model, const LocalizeOptions& options)
      : model_(model), options_(options), backend_(makeBackend(options.backend)) {
    if (!(options.timeout_seconds > 0)) throw UserError("timeout_seconds must be positive");
    if (backend_->profile() == nullptr) {
      throw UserError(
          "localize needs a device backend (spyre-sim:<profile> or "
          "cpu-emulated:<format>), not " +
          options.backend.text);
    }
    requireWeights(model, "localized (localization compares values)");
    // Every call on the model compares with the same reference: prepared once, kept with it.
    reference_ = model.memo.get<ReferenceOutputs>("reference outputs for comparison", [&model] {
      return std::make_shared<ReferenceOutputs>(flattenTensors(model.example_outputs), model.card);
    });
    result_.model = model.identity();
    result_.backend = options.backend.text;
  }

  LocalizationResult run() {
    double start = phaseClock();
    whole_ = wholeModel();
    notePhase("lowered the whole model (or found it lowered)", phaseClock() - start);
    const CompiledModel& whole = *whole_->compiled;
    if (!whole.ok()) return blocked(whole);
    result_.units = static_cast<int64_t>(modelUnits().size());
    const size_t applications = whole.lowering().pass_applications.size();
    result_.device_run_target = options_.passes ? passTarget(applications) : target();
    result_.all_causes = options_.all_causes;
    if (!options_.passes) {
      result_.budget =
          RunBudget{options_.max_runs > 0 ? options_.max_runs : defaultRunBudget(*result_.units),
                    options_.max_runs <= 0};
    }

    // Determinism first: the same whole-model run twice, the first compared with the reference
    // module by module.
    start = phaseClock();
    deviation_ = std::make_unique<ModuleDeviation>(model_, backend_->format(), options_.thresholds);
    notePhase("module thresholds", phaseClock() - start);
    const Trial first =
        trial(modelUnits().paths(), "whole model (determinism check, 1 of 2)", /*whole=*/true,
              /*lockstep=*/true);
    deviation_->take(first.lockstep);
    result_.numerics = deviation_->report();
    const Trial second =
        trial(modelUnits().paths(), "whole model (determinism check, 2 of 2)", /*whole=*/true);
    const bool deterministic =
        first.verdict == second.verdict &&
        (first.verdict == RunVerdict::kPass || first.verdict == RunVerdict::kFail
             ? sameBytes(first.outputs, second.outputs)
             : first.stopped_at == second.stopped_at);
    result_.deterministic = deterministic;
    result_.whole_model_verdict = first.verdict;
    if (!deterministic) {
      result_.second_verdict = second.verdict;
      return finish(LocalizeStatus::kNondeterministic);
    }
    if (first.verdict == RunVerdict::kPass) {
      result_.absorbed = deviation_->absorbed([](const std::string&) { return true; });
      return finish(LocalizeStatus::kPasses);
    }

    if (options_.passes) return bisectPasses(whole.lowering());

    std::vector<std::string> names;
    for (const std::string& unit : modelUnits().paths()) names.push_back(displayPath(unit));
    CausalSearchOptions search;
    search.all_causes = options_.all_causes;
    const int64_t left = result_.budget->max_runs - static_cast<int64_t>(result_.runs.size());
    search.max_probes = static_cast<size_t>(std::max<int64_t>(left, 0));
    const size_t runs_before = result_.runs.size();
    const CausalSearchResult found = causalSearch(
        names,
        [&](const std::vector<size_t>& indices, const std::string& label) {
          std::vector<std::string> units;
          units.reserve(indices.size());
          for (size_t index : indices) units.push_back(modelUnits().paths()[index]);
          return trial(units, label).verdict;
        },
        search);
    return concluded(found, runs_before);
  }

  // One whole-model device run compared with the reference in lockstep: every module call's
  // error against its threshold, and the onsets of the deviations (absorbed when the model
  // passes, clues when it fails).
  LocalizationResult numerics() {
    result_.numerics_mode = true;
    whole_ = wholeModel();
    if (!whole_->compiled->ok()) return blocked(*whole_->compiled);
    result_.units = static_cast<int64_t>(modelUnits().size());
    deviation_ = std::make_unique<ModuleDeviation>(model_, backend_->format(), options_.thresholds);
    const Trial first =
        trial(modelUnits().paths(), "whole model, compared in lockstep", /*whole=*/true,
              /*lockstep=*/true);
    deviation_->take(first.lockstep);
    result_.numerics = deviation_->report();
    result_.whole_model_verdict = first.verdict;
    result_.first_non_finite = deviation_->firstNonFinite();
    std::vector<DeviationOnset> onsets =
        deviation_->absorbed([](const std::string&) { return true; });
    if (first.verdict == RunVerdict::kPass) {
      result_.absorbed = std::move(onsets);
    } else {
      result_.deviations = std::move(onsets);
    }
    return finish(numericsStatus(first.verdict));
  }

 private:
  // The report of what the search found: the first cause is the culprit (a set's unit that
  // completed the failure), every cause is listed with its confirmation and runs.
  LocalizationResult concluded(const CausalSearchResult& found, size_t runs_before) {
    std::set<size_t> blamed;
    for (const FoundCause& cause : found.causes)
      blamed.insert(cause.units.begin(), cause.units.end());
    // The units of the bisection's last passing prefix ran on the device in a passing run: what
    // deviates among them (and is no cause's) is absorbed downstream.
    result_.absorbed = deviation_->absorbed([&](const std::string& path) {
      bool holds_a_unit = false;
      for (size_t i = 0; i < modelUnits().size(); ++i) {
        if (!isWithin(modelUnits().paths()[i], path)) continue;
        if (i >= found.clean_prefix || blamed.count(i)) return false;
        holds_a_unit = true;
      }
      return holds_a_unit;
    });
    std::vector<LocalizedCause> causes;
    for (const FoundCause& cause : found.causes) {
      LocalizedCause entry;
      static_cast<CauseConfirmation&>(entry) = confirmationOf(cause, runs_before);
      for (size_t unit : cause.units) {
        entry.units.push_back(unitAt(unit));
        entry.units.back().deviation = deviation_->errorsOf(modelUnits().paths()[unit]);
      }
      causes.push_back(std::move(entry));
    }
    result_.causes = std::move(causes);
    RunBudget& budget = *result_.budget;
    budget.exhausted = found.budget_exhausted;
    if (found.budget_exhausted) {
      budget.undecided = found.undecided;
      for (size_t unit : found.undecided_units) {
        budget.undecided_modules.push_back(displayPath(modelUnits().paths()[unit]));
      }
    }
    if (!found.causes.empty()) {
      const FoundCause& first = found.causes.front();
      result_.culprit = unitAt(first.completing);
      result_.culprit->deviation = deviation_->errorsOf(modelUnits().paths()[first.completing]);
      result_.alone_verdict = first.completing_alone_verdict;
      result_.rest_verdict = first.rest_verdict.value_or(RunVerdict::kFail);
      if (first.isSet()) result_.together = result_.causes->front().units;
    }
    if (found.budget_exhausted) return finish(LocalizeStatus::kBudgetExhausted);
    const FoundCause& first = found.causes.front();
    if (options_.operators && !first.isSet()) {
      localizeOperators(first.completing, result_.causes->front());
    }
    if (!first.isSet()) compareWithOnset(first.completing);
    if (found.causes.size() > 1) return finish(LocalizeStatus::kSeveralCauses);
    if (first.isSet()) return finish(LocalizeStatus::kNeedsSeveral);
    return finish(first.rest_verdict == RunVerdict::kPass
                      ? LocalizeStatus::kLocalized
                      : LocalizeStatus::kLocalizedWithOtherCauses);
  }

  static CauseConfirmation confirmationOf(const FoundCause& cause, size_t runs_before) {
    CauseConfirmation confirmation;
    confirmation.alone_verdict = cause.alone_verdict;
    confirmation.without_each = cause.without_each;
    confirmation.rest_verdict = cause.rest_verdict.value_or(RunVerdict::kFail);
    confirmation.confirmed = cause.confirmed();
    confirmation.first_run = static_cast<int64_t>(runs_before + cause.first_probe + 1);
    confirmation.runs = static_cast<int64_t>(cause.probes);
    return confirmation;
  }

  // The culprit module's own operators, searched as the modules were: each run puts some of
  // them on the device (with the modules riding along), the rest of the model on the CPU
  // reference. A culprit of one operator needs no run: the module's confirmation is its.
  void localizeOperators(size_t culprit_index, const LocalizedCause& module) {
    const std::string& culprit = modelUnits().paths()[culprit_index];
    const std::vector<int64_t>& nodes = modelUnits().nodesOf(culprit);
    OperatorCause found;
    found.candidates = static_cast<int64_t>(nodes.size());
    if (nodes.size() == 1) {
      static_cast<CauseConfirmation&>(found) = module;
      found.rest_verdict = RunVerdict::kPass;  // nothing else of it
      found.runs = 0;
      found.operators = {operatorAt(nodes.front())};
      result_.culprit_operators = std::move(found);
      return;
    }
    std::vector<std::string> names;
    names.reserve(nodes.size());
    for (int64_t node : nodes) {
      names.push_back(operatorLabel(modelUnits().nodeAt(node)->kind().toQualString(), node));
    }
    RunBudget& budget = *result_.budget;
    const std::string of = " of " + displayPath(culprit);
    CausalSearchOptions search;
    search.noun = "operator";
    const int64_t left = budget.max_runs - static_cast<int64_t>(result_.runs.size());
    search.max_probes = static_cast<size_t>(std::max<int64_t>(left, 0));
    const size_t runs_before = result_.runs.size();
    const CausalSearchResult ops = causalSearch(
        names,
        [&](const std::vector<size_t>& indices, const std::string& label) {
          std::vector<int64_t> chosen;
          chosen.reserve(indices.size());
          for (size_t index : indices) chosen.push_back(nodes[index]);
          return operatorTrial(culprit, chosen, label + of).verdict;
        },
        search);
    if (ops.budget_exhausted || ops.causes.empty()) {
      budget.exhausted = true;
      budget.undecided = "the operators" + of + ": " + ops.undecided;
      for (size_t index : ops.undecided_units) budget.undecided_operators.push_back(names[index]);
      return;
    }
    const FoundCause& cause = ops.causes.front();
    static_cast<CauseConfirmation&>(found) = confirmationOf(cause, runs_before);
    for (size_t index : cause.units) found.operators.push_back(operatorAt(nodes[index]));
    result_.culprit_operators = std::move(found);
  }

  // The numerics' first onset against the culprit. An onset that differs is explained: one
  // that holds the culprit, or that a value of the culprit's own operators reaches, is fed by
  // it; one more run, of the onset alone on the device (within the budget), shows whether it
  // fails by itself.
  void compareWithOnset(size_t culprit_index) {
    const std::vector<DeviationOnset> onsets =
        deviation_->absorbed([](const std::string&) { return true; });
    if (onsets.empty()) return;
    const std::string& culprit = modelUnits().paths()[culprit_index];
    OnsetAgreement agreement;
    agreement.onset = onsets.front();
    agreement.culprit = displayPath(culprit);
    const std::string onset =
        agreement.onset.module == displayPath("") ? "" : agreement.onset.module;
    std::vector<std::string> within;
    for (const std::string& unit : modelUnits().paths()) {
      if (isWithin(unit, onset)) within.push_back(unit);
    }
    agreement.own_operators = !within.empty();
    if (onset == culprit) {
      agreement.relation = "culprit";
    } else if (isWithin(culprit, onset)) {
      agreement.relation = "contains_culprit";
    } else {
      agreement.relation = feeds(culprit, onset) ? "fed_by_culprit" : "not_fed_by_culprit";
      const int64_t runs = static_cast<int64_t>(result_.runs.size());
      if (!within.empty() && runs < result_.budget->max_runs) {
        agreement.alone_verdict =
            trial(within, "only " + agreement.onset.module + " (the numerics' first onset)")
                .verdict;
      }
    }
    result_.numerics_onset = std::move(agreement);
  }

  // Whether a value the unit's own operators compute reaches an operator within `path`.
  bool feeds(const std::string& unit, const std::string& path) const {
    std::vector<const torch::jit::Node*> work;
    for (int64_t position : modelUnits().nodesOf(unit)) {
      work.push_back(modelUnits().nodeAt(position));
    }
    std::set<const torch::jit::Node*> seen;
    while (!work.empty()) {
      const torch::jit::Node* node = work.back();
      work.pop_back();
      if (!seen.insert(node).second) continue;
      if (node->kind().is_aten() && isWithin(modulePathOf(*node), path)) return true;
      for (const torch::jit::Value* output : node->outputs()) {
        for (const torch::jit::Use& use : output->uses()) {
          // A block's result leaves through the node that holds the block.
          const torch::jit::Node* user = use.user;
          if (user->kind() == torch::jit::prim::Return) user = user->owningBlock()->owningNode();
          if (user != nullptr) work.push_back(user);
        }
      }
    }
    return false;
  }

  LocalizedOperator operatorAt(int64_t position) const {
    const torch::jit::Node* node = modelUnits().nodeAt(position);
    LocalizedOperator op;
    op.op = node->kind().toQualString();
    op.node = position;
    op.where = describeNode(*node, model_.modules);
    if (const auto record = model_.records.find(node); record != model_.records.end()) {
      op.inputs = record->second.inputs;
      op.outputs = record->second.outputs;
    }
    op.cpu_fallback = modelUnits().isCpuFallback(position);
    return op;
  }

  Trial operatorTrial(const std::string& culprit, const std::vector<int64_t>& nodes,
                      const std::string& what) {
    announce(what);
    Placement placement;
    placement.device_modules = modelUnits().ridersOf(culprit);
    placement.device_nodes = nodes;
    placement.own_nodes_only = true;
    placement.host_modules = model_.host_modules;
    return judged(deviceRun(placement, false, -1), 1, what);
  }

  // The whole model, but what adapters keep on the host, lowered for the device: the same on
  // every call for the model and device (an agent localizes one model again and again), so
  // kept with the model.
  std::shared_ptr<const WholeModel> wholeModel() const {
    const std::string key = "localization: the whole model on " + backend_->spec().text + " " +
                            backend_->profile()->content_sha256;
    return model_.memo.get<WholeModel>(key, [this] {
      auto whole = std::make_shared<WholeModel>();
      Placement everything;
      everything.host_modules = model_.host_modules;
      whole->compiled = backend_->compile(model_, everything);
      if (whole->compiled->ok()) {
        whole->units = LocalizationUnits(*model_.graph, whole->compiled->lowering());
      }
      return whole;
    });
  }

  const LocalizationUnits& modelUnits() const { return whole_->units; }

  LocalizationResult blocked(const CompiledModel& whole) {
    result_.blockers = static_cast<int64_t>(whole.lowering().blockers.size());
    return finish(LocalizeStatus::kBlocked);
  }

  int64_t target() const { return singleCauseTarget(static_cast<int64_t>(modelUnits().size())); }

  // ceil(log2 A) bisection runs over A pass applications, two for determinism, one without
  // any pass.
  static int64_t passTarget(size_t applications) {
    return static_cast<int64_t>(std::ceil(std::log2(std::max<size_t>(applications, 1)))) + 3;
  }

  // The whole model with only the first N pass applications: the smallest N that fails names
  // the application that introduces the failure.
  LocalizationResult bisectPasses(const LoweringResult& whole) {
    const size_t count = whole.pass_applications.size();
    result_.pass_applications = static_cast<int64_t>(count);
    if (count == 0) return finish(LocalizeStatus::kNoPassApplications);
    const std::string of = " of " + std::to_string(count) + " pass applications";
    if (trial(modelUnits().paths(), "whole model, none" + of, true, false, 0).verdict !=
        RunVerdict::kPass) {
      return finish(LocalizeStatus::kFailsWithoutPasses);
    }
    size_t pass = 0, fail = count;  // the first `fail` applications fail; `pass` pass
    while (fail - pass > 1) {
      const size_t middle = pass + (fail - pass) / 2;
      const Trial probe =
          trial(modelUnits().paths(), "whole model, the first " + std::to_string(middle) + of, true,
                false, static_cast<int64_t>(middle));
      (probe.verdict == RunVerdict::kPass ? pass : fail) = middle;
    }
    const PassApplication& culprit = whole.pass_applications[fail - 1];
    result_.pass_culprit =
        PassCulprit{static_cast<int64_t>(fail),          culprit.pass,
                    culprit.node->kind().toQualString(), displayPath(modulePathOf(*culprit.node)),
                    culprit.into->kind().toQualString(), displayPath(modulePathOf(*culprit.into))};
    return finish(LocalizeStatus::kPassLocalized);
  }

  // `lockstep`: compare the run with the reference module call by module call.
  Trial trial(const std::vector<std::string>& units, const std::string& what, bool whole = false,
              bool lockstep = false, int64_t pass_limit = -1) {
    announce(what);
    return judged(deviceRun(placementOf(units, whole), lockstep, pass_limit),
                  static_cast<int64_t>(whole ? modelUnits().size() : units.size()), what);
  }

  void announce(const std::string& what) {
    options_.control.checkCancelled();
    // Past the single cause's target (a set, more causes), toward the budget.
    const int64_t runs = static_cast<int64_t>(result_.runs.size());
    const int64_t total = runs < target() || !result_.budget ? target() : result_.budget->max_runs;
    options_.control.progress(static_cast<double>(runs),
                              static_cast<double>(std::max(total, runs + 1)),
                              "device run: " + what);
  }

  Placement placementOf(const std::vector<std::string>& units, bool whole) const {
    Placement placement;
    if (!whole) {
      placement.device_modules = modelUnits().placed(units);
      placement.own_nodes_only = true;
    }
    placement.host_modules = model_.host_modules;
    return placement;
  }

  bool hosted() const { return backend_->spec().kind == BackendSpec::Kind::kSpyreSim; }

  // The run of a placement; none when it does not compile. A simulated device runs in the
  // model's host, which lowers the placement itself and says when it is blocked: this process
  // does not lower it too.
  std::optional<BackendRun> deviceRun(const Placement& placement, bool lockstep,
                                      int64_t pass_limit) const {
    RunOptions run_options;
    run_options.timeout_seconds = options_.timeout_seconds;
    run_options.cancelled = options_.control.cancelled;
    run_options.lockstep = lockstep;
    if (hosted()) {
      return runOnModelHost(model_, DeviceRunSpec{backend_->spec().text, placement, pass_limit},
                            model_.example_inputs, run_options);
    }
    const auto compiled = backend_->compileWithPassLimit(model_, placement, pass_limit);
    if (!compiled->ok()) return std::nullopt;
    return compiled->run(model_.example_inputs, run_options);
  }

  // The run's end-to-end verdict against the reference, noted among the runs.
  Trial judged(std::optional<BackendRun> run, int64_t modules_on_device, const std::string& what) {
    Trial result;
    double seconds = 0.0;
    if (!run || run->status == BackendRun::Status::kBlocked) {
      result.verdict = RunVerdict::kBlocked;
    } else {
      seconds = run->seconds;
      options_.control.checkCancelled();
      if (run->status == BackendRun::Status::kCompleted) {
        result.outputs = flattenTensors(run->outputs);
        if (run->lockstep) result.lockstep = std::move(*run->lockstep);
        const bool passed =
            compareOutputs(*reference_, result.outputs, backend_->format(), {}).passed;
        result.verdict = passed ? RunVerdict::kPass : RunVerdict::kFail;
      } else {
        result.verdict = incompleteRunVerdict(run->status);
        result.stopped_at = run->node;
        result.message = run->message;
      }
    }
    result_.runs.push_back({what, modules_on_device, result.verdict, result.message, seconds});
    return result;
  }

  LocalizationUnit unitAt(size_t index) const {
    const std::string& path = modelUnits().paths()[index];
    LocalizationUnit unit;
    unit.module = displayPath(path);
    unit.module_class = model_.modules.classOf(path);
    unit.position = static_cast<int64_t>(index + 1);
    unit.ops = modelUnits().opsOf(path);
    unit.cpu_fallback_ops = modelUnits().cpuFallbackOpsOf(path);
    return unit;
  }

  LocalizationResult finish(LocalizeStatus status) {
    result_.status = status;
    return std::move(result_);
  }

  const LoadedModel& model_;
  LocalizeOptions options_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const ReferenceOutputs> reference_;  // every trial is compared with it
  std::shared_ptr<const WholeModel> whole_;            // set first by run() and numerics()
  std::unique_ptr<ModuleDeviation> deviation_;
  LocalizationResult result_;
};

}  // namespace

int64_t defaultRunBudget(int64_t units) {
  return 4 * singleCauseTarget(units);
}

LocalizationResult localizeDivergence(const LoadedModel& model, const LocalizeOptions& options) {
  return Localizer(model, options).run();
}

LocalizationResult lockstepNumerics(const LoadedModel& model, const LocalizeOptions& options) {
  return Localizer(model, options).numerics();
}

}  // namespace stickler
