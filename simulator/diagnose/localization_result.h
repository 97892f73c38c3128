// What causal localization and the lockstep numerics found, as plain data (LibTorch-free):
// filled by simulator/diagnose/causal_localization.cpp, written as the stickler.localize and
// stickler.diagnose (mode numerics) documents, with their summaries, by tools/localize_report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/graph/model_identity.h"
#include "simulator/graph/value_desc.h"
#include "simulator/run/run_verdict.h"

namespace stickler {

enum class LocalizeStatus {
  kLocalized,                 // alone on the device it fails; everything else there passes
  kLocalizedWithOtherCauses,  // alone it fails, but the model fails without it as well
  kNeedsSeveral,              // a minimal set of modules that fail only together
  kSeveralCauses,             // all_causes: more than one cause, each confirmed
  kBudgetExhausted,           // the run budget ended the search before it was decided
  kPasses,                    // nothing to localize
  kNondeterministic,          // two identical whole-model runs disagree
  kBlocked,                   // the model does not compile
  kPassLocalized,             // --passes: the pass application that introduces the failure
  kFailsWithoutPasses,        // --passes: it fails with no pass applied
  kNoPassApplications,        // --passes: the lowering applies none
  // Lockstep numerics only: the model did not pass end to end (its verdict says how).
  kFails,
  kAborted,
  kTimedOut,
  kFailed,
};

// "localized", "localized_with_other_causes", ..., "fails", "aborted": the reports' spelling.
const char* localizeStatusName(LocalizeStatus status);

// One module call of a device run compared with the reference in lockstep.
struct ModuleCallDeviation {
  std::string module;  // its path
  std::string module_class;
  std::optional<double> max_abs, mean_abs, cosine, rel_l2, sqnr_db;  // none when not finite
  bool non_finite = false;     // NaN or inf where the reference is finite
  double emulated_rel_l2 = 0;  // the error of the emulated format alone
  double threshold = 0;
  std::optional<double> ratio_to_emulated;
  bool over_threshold = false;
};

// How the per-module thresholds were derived (module_thresholds.h).
struct ThresholdBasis {
  std::string emulated;  // cpu-emulated:<format>
  int64_t input_sets = 0;
  double percentile = 0;
  double margin = 0;
  double floor = 0;  // the format's unit roundoff
  std::string cache_key;
  bool from_cache = false;
};

struct NumericsReport {
  ThresholdBasis thresholds;
  std::vector<ModuleCallDeviation> modules;  // every compared call, in execution order
};

// The first module over its threshold (or one whose error jumps tenfold), with how many
// modules after it carry the deviation.
struct DeviationOnset {
  std::string module;
  std::string module_class;
  std::optional<double> rel_l2;
  double threshold = 0;
  std::optional<double> ratio_to_emulated;
  int64_t downstream_over_threshold = 0;
};

// A module's own error in the whole-model run.
struct UnitDeviation {
  std::optional<double> rel_l2;
  double threshold = 0;
  std::optional<double> ratio_to_emulated;
  bool over_threshold = false;
};

// The operator whose result first became non-finite in the device run where the reference's is
// finite: named even when it belongs to no module (the forward's own operators, a mask built
// with finfo.min at the root), so a NaN always has a source.
struct FirstNonFinite {
  std::string op;        // "aten::mul"
  std::string module;    // display path; the root's own operators: "(root)"
  std::string where;     // the operator as reports describe nodes (module class, source line)
  std::string kind;      // "NaN" or "inf"
  int64_t elements = 0;  // how many elements of its results are
};

// A unit of localization: a module whose own operators run on the device.
struct LocalizationUnit {
  std::string module;  // display path
  std::string module_class;
  int64_t position = 0;  // 1-based, in execution order
  std::map<std::string, int64_t> ops;
  std::map<std::string, int64_t> cpu_fallback_ops;  // those of `ops` run on the host CPU
  // The culprit only: its error in the whole-model run; none when it never finished.
  std::optional<UnitDeviation> deviation;
};

// One device run and what it concluded.
struct DeviceTrial {
  std::string device;  // what was on the device
  int64_t modules_on_device = 0;
  RunVerdict verdict = RunVerdict::kFail;
  std::string message;   // when it did not complete
  double seconds = 0.0;  // the device run, as its caller waited for it (its host's included)
};

// The runs that confirm a cause (modules, or operators within the culprit module).
struct CauseConfirmation {
  RunVerdict alone_verdict = RunVerdict::kFail;  // the cause alone on the device
  std::vector<RunVerdict> without_each;          // a set: without member i, the rest of it
  RunVerdict rest_verdict = RunVerdict::kFail;   // the units still searched, without it
  bool confirmed = false;  // alone it fails; a set: without any one member it passes
  int64_t first_run = 0;   // 1-based, among the report's runs
  int64_t runs = 0;        // spent finding and confirming it
};

// A cause localizeDivergence found: one module, or a 1-minimal set of modules that fail only
// together.
struct LocalizedCause : CauseConfirmation {
  std::vector<LocalizationUnit> units;  // in execution order, each with its own deviation
};

// One operator of the culprit module, as the example run saw it.
struct LocalizedOperator {
  std::string op;     // "aten::bmm"
  int64_t node = 0;   // its position in the graph's execution order
  std::string where;  // "aten::bmm in h.0.self_attention (BloomAttention) at modeling_bloom.py:201"
  std::vector<ValueDesc> inputs, outputs;
  bool cpu_fallback = false;  // the device stack runs it on its host CPU
};

// "aten::bmm (node 57)": how runs, confirmations and summaries name an operator of the culprit.
std::string operatorLabel(const std::string& op, int64_t node);

// Operator-level localization within the culprit module: its own device operators searched
// the way modules are, the rest of the model on the CPU reference.
struct OperatorCause : CauseConfirmation {
  std::vector<LocalizedOperator> operators;  // one, or a minimal set, in execution order
  int64_t candidates = 0;                    // the culprit's own device operators
};

// Localization's culprit set against where the whole-model run's numerics first deviate: the
// two agree, or the report says why not (the onset only carries the culprit's bad values).
struct OnsetAgreement {
  DeviationOnset onset;  // the first module over its threshold
  // "culprit" (they agree), "contains_culprit" (the onset holds it), "fed_by_culprit" (a value
  // the culprit's own operators compute reaches the onset), "not_fed_by_culprit".
  std::string relation;
  std::string culprit;                      // display path
  bool own_operators = true;                // false: the onset runs no device operator of its own
  std::optional<RunVerdict> alone_verdict;  // the onset alone on the device, when run
};

// How many device runs localization may make, and what was left undecided when they ran out.
struct RunBudget {
  int64_t max_runs = 0;
  bool by_default = true;  // not asked for
  bool exhausted = false;
  std::string undecided;                         // where the search was
  std::vector<std::string> undecided_modules;    // the modules it was deciding among
  std::vector<std::string> undecided_operators;  // or the culprit's operators
};

struct PassCulprit {
  int64_t application = 0;  // 1-based
  std::string pass;         // fusion
  std::string op, module, into_op, into_module;
};

struct LocalizationResult {
  bool numerics_mode = false;  // lockstepNumerics, not localizeDivergence
  ModelIdentity model;
  std::string backend;
  LocalizeStatus status = LocalizeStatus::kPasses;
  int64_t blockers = 0;  // kBlocked: how many
  std::optional<int64_t> units;
  std::optional<int64_t> device_run_target;
  std::optional<bool> deterministic;
  std::optional<RunVerdict> whole_model_verdict;
  std::optional<RunVerdict> second_verdict;  // kNondeterministic: the other run's
  std::optional<NumericsReport> numerics;
  std::optional<std::vector<DeviationOnset>> absorbed;
  std::optional<std::vector<DeviationOnset>> deviations;  // numerics, when it does not pass
  std::optional<FirstNonFinite> first_non_finite;         // numerics, when a value became so
  std::optional<LocalizationUnit> culprit;
  std::optional<RunVerdict> alone_verdict;  // the confirmation runs
  std::optional<RunVerdict> rest_verdict;
  std::optional<std::vector<LocalizationUnit>> together;  // kNeedsSeveral: the first cause's set
  bool all_causes = false;                                // asked to go on past the first cause
  std::optional<std::vector<LocalizedCause>> causes;      // in order of discovery
  // The culprit's operator (or operators) that make it fail: searched when it has several, its
  // only one otherwise; none when the culprit is no single module, or the budget ran out first
  // (budget.undecided says so).
  std::optional<OperatorCause> culprit_operators;
  std::optional<OnsetAgreement> numerics_onset;  // a single culprit, when anything deviates
  std::optional<RunBudget> budget;
  std::optional<int64_t> pass_applications;
  std::optional<PassCulprit> pass_culprit;
  std::vector<DeviceTrial> runs;
};

}  // namespace stickler
