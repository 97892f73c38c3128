#include "tools/diagnose/localize_report.h"

#include <string>

#include "simulator/graph/module_table.h"
#include "tools/framework/next_step.h"
#include "tools/reports/result_json.h"

namespace stickler {

using nlohmann::json;

namespace {

json numericsToJson(const NumericsReport& numerics) {
  json modules = json::array();
  for (const ModuleCallDeviation& call : numerics.modules) {
    modules.push_back({{"module", call.module},
                       {"module_class", call.module_class},
                       {"max_abs", numberOrNull(call.max_abs)},
                       {"mean_abs", numberOrNull(call.mean_abs)},
                       {"cosine", numberOrNull(call.cosine)},
                       {"rel_l2", numberOrNull(call.rel_l2)},
                       {"sqnr_db", numberOrNull(call.sqnr_db)},
                       {"non_finite", call.non_finite},
                       {"emulated_rel_l2", call.emulated_rel_l2},
                       {"threshold", call.threshold},
                       {"ratio_to_emulated", numberOrNull(call.ratio_to_emulated)},
                       {"over_threshold", call.over_threshold}});
  }
  const ThresholdBasis& basis = numerics.thresholds;
  return {{"thresholds",
           {{"metric", "rel_l2"},
            {"reference", "cpu"},
            {"emulated", basis.emulated},
            {"input_sets", basis.input_sets},
            {"percentile", basis.percentile},
            {"margin", basis.margin},
            {"floor", basis.floor},
            {"cache_key", basis.cache_key},
            {"from_cache", basis.from_cache}}},
          {"modules", modules}};
}

json onsetsToJson(const std::vector<DeviationOnset>& onsets) {
  json list = json::array();
  for (const DeviationOnset& onset : onsets) {
    list.push_back({{"module", onset.module},
                    {"module_class", onset.module_class},
                    {"rel_l2", numberOrNull(onset.rel_l2)},
                    {"threshold", onset.threshold},
                    {"ratio_to_emulated", numberOrNull(onset.ratio_to_emulated)},
                    {"downstream_over_threshold", onset.downstream_over_threshold}});
  }
  return list;
}

json unitToJson(const LocalizationUnit& unit) {
  json entry{{"module", unit.module},
             {"module_class", unit.module_class},
             {"position", unit.position},
             {"ops", unit.ops}};
  if (!unit.cpu_fallback_ops.empty()) entry["cpu_fallback_ops"] = unit.cpu_fallback_ops;
  return entry;
}

// A cause's confirmation; `members` name what without_each leaves out, in order, under `key`.
json confirmationToJson(const CauseConfirmation& cause, const char* key,
                        const std::vector<std::string>& members) {
  json without_each = json::array();
  for (size_t i = 0; i < cause.without_each.size() && i < members.size(); ++i) {
    without_each.push_back({{key, members[i]}, {"verdict", runVerdictName(cause.without_each[i])}});
  }
  return {{"alone_on_device", runVerdictName(cause.alone_verdict)},
          {"without_each", without_each},
          {"everything_else_on_device", runVerdictName(cause.rest_verdict)},
          {"confirmed", cause.confirmed}};
}

json operatorsToJson(const OperatorCause& cause) {
  json operators = json::array();
  std::vector<std::string> members;
  for (const LocalizedOperator& op : cause.operators) {
    operators.push_back({{"op", op.op},
                         {"node", op.node},
                         {"where", op.where},
                         {"inputs", valueDescsToJson(op.inputs)},
                         {"outputs", valueDescsToJson(op.outputs)},
                         {"cpu_fallback", op.cpu_fallback}});
    members.push_back(operatorLabel(op.op, op.node));
  }
  return {{"kind", cause.operators.size() > 1 ? "together" : "operator"},
          {"candidates", cause.candidates},
          {"operators", operators},
          {"confirmation", confirmationToJson(cause, "operator", members)},
          {"first_run", cause.first_run},
          {"runs", cause.runs}};
}

json deviationToJson(const std::optional<UnitDeviation>& deviation) {
  if (!deviation) return nullptr;
  return {{"rel_l2", numberOrNull(deviation->rel_l2)},
          {"threshold", deviation->threshold},
          {"ratio_to_emulated", numberOrNull(deviation->ratio_to_emulated)},
          {"over_threshold", deviation->over_threshold}};
}

json causesToJson(const std::vector<LocalizedCause>& causes) {
  json list = json::array();
  for (const LocalizedCause& cause : causes) {
    json modules = json::array();
    std::vector<std::string> members;
    for (const LocalizationUnit& unit : cause.units) {
      json entry = unitToJson(unit);
      entry["deviation"] = deviationToJson(unit.deviation);
      modules.push_back(std::move(entry));
      members.push_back(unit.module);
    }
    json entry{{"kind", cause.units.size() > 1 ? "together" : "module"},
               {"modules", modules},
               {"confirmation", confirmationToJson(cause, "module", members)},
               {"first_run", cause.first_run},
               {"runs", cause.runs}};
    if (cause.units.size() > 1) {
      // The consecutive modules from its first member to its last: context, not the cause.
      entry["span"] = {{"from", cause.units.front().module},
                       {"to", cause.units.back().module},
                       {"modules", cause.units.back().position - cause.units.front().position + 1}};
    }
    list.push_back(std::move(entry));
  }
  return list;
}

json budgetToJson(const RunBudget& budget, size_t runs) {
  json entry{{"max_runs", budget.max_runs},
             {"default", budget.by_default},
             {"runs", runs},
             {"exhausted", budget.exhausted}};
  if (budget.exhausted) {
    entry["undecided"] = {{"reason", budget.undecided}, {"modules", budget.undecided_modules}};
    if (!budget.undecided_operators.empty()) {
      entry["undecided"]["operators"] = budget.undecided_operators;
    }
  }
  return entry;
}

// "a", "a and b", "a, b and c": a cause's modules.
std::string causeText(const LocalizedCause& cause) {
  std::string text;
  for (size_t i = 0; i < cause.units.size(); ++i) {
    if (i > 0) text += i + 1 == cause.units.size() ? " and " : ", ";
    text += cause.units[i].module;
  }
  return cause.units.size() > 1 ? text + " together" : text;
}

json runsToJson(const std::vector<DeviceTrial>& runs) {
  json list = json::array();
  for (const DeviceTrial& run : runs) {
    json entry{{"device", run.device},
               {"modules_on_device", run.modules_on_device},
               {"verdict", runVerdictName(run.verdict)},
               {"seconds", run.seconds}};
    if (!run.message.empty()) entry["message"] = run.message;
    list.push_back(std::move(entry));
  }
  return list;
}

std::string verb(const std::optional<RunVerdict>& verdict) {
  return runVerdictVerb(verdict.value_or(RunVerdict::kFail));
}

std::string absorbedCount(const std::optional<std::vector<DeviationOnset>>& absorbed) {
  return std::to_string(absorbed ? absorbed->size() : 0) +
         " deviation(s) over threshold absorbed downstream";
}

std::string numericsSummary(const LocalizationResult& result) {
  const std::string on = " end to end on " + result.backend;
  if (result.status == LocalizeStatus::kPasses) {
    return "the model passes" + on +
           (result.absorbed && !result.absorbed->empty() ? "; " + absorbedCount(result.absorbed)
                                                         : "; no module is over its threshold");
  }
  std::string summary = "the model " + verb(result.whole_model_verdict) + on;
  if (result.first_non_finite) {
    const FirstNonFinite& first = *result.first_non_finite;
    summary +=
        "; the first " + first.kind + " (where the reference is finite) comes from " + first.where;
  }
  if (result.deviations && !result.deviations->empty()) {
    const DeviationOnset& onset = result.deviations->front();
    return summary + "; the first module over its threshold is " + displayPath(onset.module) +
           " (" + onset.module_class + ")";
  }
  return summary + "; no module is over its threshold before the end";
}

// "; within it, the operator aten::bmm (node 57): with it alone on the device the model fails,
// with the module's other 11 operators there it passes": the operator search, when it ran.
std::string operatorText(const std::optional<OperatorCause>& cause) {
  if (!cause || cause->candidates < 2) return "";
  std::string ops;
  for (size_t i = 0; i < cause->operators.size(); ++i) {
    if (i > 0) ops += i + 1 == cause->operators.size() ? " and " : ", ";
    ops += operatorLabel(cause->operators[i].op, cause->operators[i].node);
  }
  const bool set = cause->operators.size() > 1;
  const int64_t others = cause->candidates - static_cast<int64_t>(cause->operators.size());
  return "; within it, the operator" + std::string(set ? "s " : " ") + ops + ": with " +
         (set ? "them" : "it") + " alone on the device the model " + verb(cause->alone_verdict) +
         ", with the module's other " + std::to_string(others) + " operator(s) there it " +
         verb(cause->rest_verdict);
}

std::string summaryOf(const LocalizationResult& result) {
  const std::string culprit = result.culprit ? result.culprit->module : "";
  const std::string of_passes =
      " of " + std::to_string(result.pass_applications.value_or(0)) + " pass applications";
  switch (result.status) {
    case LocalizeStatus::kBlocked:
      return "the model does not compile on " + result.backend + " (" +
             std::to_string(result.blockers) +
             " blockers): " + (result.numerics_mode ? "the numerics mode" : "localization") +
             " needs a model that compiles";
    case LocalizeStatus::kNondeterministic:
      return std::string("two identical whole-model runs disagree (") +
             runVerdictName(result.whole_model_verdict.value_or(RunVerdict::kFail)) + ", " +
             runVerdictName(result.second_verdict.value_or(RunVerdict::kFail)) +
             "): the device is nondeterministic here, and no layer is blamed for it";
    case LocalizeStatus::kPasses:
      if (result.numerics_mode) return numericsSummary(result);
      return "the model passes end to end on " + result.backend + ": nothing to localize" +
             (result.absorbed && !result.absorbed->empty()
                  ? " (" + absorbedCount(result.absorbed) + ")"
                  : std::string());
    case LocalizeStatus::kNeedsSeveral: {
      const LocalizedCause& cause = result.causes.value().front();
      return causeText(cause) + " fail the model only together: a minimal set of " +
             std::to_string(cause.units.size()) + " modules (together on the device the model " +
             verb(cause.alone_verdict) + ", without any one of them it passes" +
             (cause.confirmed ? "" : ", not confirmed") + ")" +
             (cause.rest_verdict == RunVerdict::kPass
                  ? std::string()
                  : "; the model still " + verb(cause.rest_verdict) +
                        " without them: another cause remains (all_causes finds every one)");
    }
    case LocalizeStatus::kSeveralCauses: {
      const auto& causes = result.causes.value();
      std::string listed;
      for (size_t i = 0; i < causes.size(); ++i) {
        listed += (i > 0 ? "; " : "") + std::to_string(i + 1) + ". " + causeText(causes[i]);
      }
      return std::to_string(causes.size()) +
             " causes, each failing the model on the device while the ones before it ran on "
             "the CPU: " +
             listed + "; with all of them on the CPU the model passes";
    }
    case LocalizeStatus::kBudgetExhausted: {
      const RunBudget& budget = result.budget.value();
      const size_t found = result.causes ? result.causes->size() : 0;
      std::string text =
          "the run budget (" + std::to_string(budget.max_runs) + " device runs) ended the search ";
      if (found == 0) {
        text += "before a cause was confirmed";
      } else {
        text += "after " + std::to_string(found) + " cause(s) (";
        for (size_t i = 0; i < found; ++i) {
          text += (i > 0 ? "; " : "") + causeText((*result.causes)[i]);
        }
        text += ")";
      }
      return text + "; undecided: " + budget.undecided + "; raise max_runs to go on";
    }
    case LocalizeStatus::kLocalizedWithOtherCauses:
      return culprit + " fails the model alone on the device, but the model still " +
             verb(result.rest_verdict) +
             " without it: another module fails as well; localize with all_causes to name every "
             "cause, or run again with this one fixed or adapted";
    case LocalizeStatus::kLocalized:
      return culprit + " (" + result.culprit->module_class +
             ") flips the end-to-end verdict: alone on the device the model " +
             verb(result.alone_verdict) + ", and with only it on the CPU the model passes" +
             operatorText(result.culprit_operators);
    case LocalizeStatus::kNoPassApplications:
      return "the lowering applies no passes to this model on " + result.backend +
             " (no fusion): no pass application can be the cause";
    case LocalizeStatus::kFailsWithoutPasses:
      return "the model fails with no pass applied, so no pass introduces the failure";
    case LocalizeStatus::kPassLocalized: {
      const PassCulprit& pass = result.pass_culprit.value();
      return pass.pass + " application " + std::to_string(pass.application) + of_passes + " (" +
             pass.op + " in " + pass.module + " into the kernel of " + pass.into_op + " in " +
             pass.into_module +
             ") introduces the failure: with the applications before it the model passes, with "
             "it the model " +
             verb(result.whole_model_verdict);
    }
    case LocalizeStatus::kFails:
    case LocalizeStatus::kAborted:
    case LocalizeStatus::kTimedOut:
    case LocalizeStatus::kFailed:
      return numericsSummary(result);
  }
  return "";
}

// Why the numerics' first onset and the culprit differ, or that they agree, in one sentence.
std::string onsetExplanation(const OnsetAgreement& agreement) {
  const std::string& onset = agreement.onset.module;
  const std::string& culprit = agreement.culprit;
  if (agreement.relation == "culprit") return "the numerics' first onset is the culprit, " + onset;
  if (agreement.relation == "contains_culprit") {
    return "onset in " + onset + ", which holds the culprit " + culprit;
  }
  std::string text = "onset in " + onset +
                     (agreement.relation == "fed_by_culprit"
                          ? ", fed by the culprit " + culprit
                          : ", which the culprit " + culprit + " does not feed");
  if (!agreement.own_operators) {
    return text + "; " + onset + " runs no device operator of its own: it carries what it is given";
  }
  if (!agreement.alone_verdict) return text + " (not run alone: the run budget was spent)";
  if (*agreement.alone_verdict == RunVerdict::kPass) {
    return text + "; " + onset + " alone on the device passes";
  }
  return text + "; " + onset + " alone on the device " + runVerdictName(*agreement.alone_verdict) +
         "s too";
}

// "; onset in X, fed by the culprit Y; X alone on the device passes" when they differ.
std::string onsetClause(const LocalizationResult& result) {
  if (!result.numerics_onset || result.numerics_onset->relation == "culprit") return "";
  return "; " + onsetExplanation(*result.numerics_onset);
}

json onsetAgreementToJson(const OnsetAgreement& agreement) {
  json entry = onsetsToJson({agreement.onset}).at(0);
  entry["relation"] = agreement.relation;
  entry["culprit"] = agreement.culprit;
  entry["own_operators"] = agreement.own_operators;
  entry["alone_on_device"] =
      agreement.alone_verdict ? json(runVerdictName(*agreement.alone_verdict)) : json(nullptr);
  entry["explanation"] = onsetExplanation(agreement);
  return entry;
}

}  // namespace

json localizeReport(const LocalizationResult& result) {
  json report{{"schema", result.numerics_mode ? "stickler.diagnose" : "stickler.localize"},
              {"version", 1},
              {"model", modelIdentityToJson(result.model)},
              {"backend", result.backend},
              {"status", localizeStatusName(result.status)},
              {"summary", summaryOf(result) + onsetClause(result) + nextStepFor(result)},
              {"runs", runsToJson(result.runs)},
              {"device_runs", result.runs.size()}};
  if (result.numerics_mode) report["mode"] = "numerics";
  if (result.units) report["units"] = *result.units;
  if (result.device_run_target) report["device_run_target"] = *result.device_run_target;
  if (result.numerics) report["numerics"] = numericsToJson(*result.numerics);
  if (result.deterministic) {
    report["determinism"] = {{"runs", 2}, {"deterministic", *result.deterministic}};
  }
  if (result.whole_model_verdict) {
    report["whole_model_verdict"] = runVerdictName(*result.whole_model_verdict);
  }
  if (result.absorbed) report["absorbed"] = onsetsToJson(*result.absorbed);
  if (result.deviations) report["deviations"] = onsetsToJson(*result.deviations);
  if (result.first_non_finite) {
    const FirstNonFinite& first = *result.first_non_finite;
    report["first_non_finite"] = {{"op", first.op},
                                  {"module", first.module},
                                  {"where", first.where},
                                  {"kind", first.kind},
                                  {"elements", first.elements}};
  }
  if (result.culprit) {
    report["culprit"] = unitToJson(*result.culprit);
    report["culprit"]["deviation"] = deviationToJson(result.culprit->deviation);
  }
  if (result.alone_verdict && result.rest_verdict) {
    report["confirmation"] = {{"alone_on_device", runVerdictName(*result.alone_verdict)},
                              {"everything_else_on_device", runVerdictName(*result.rest_verdict)},
                              {"confirmed", result.status == LocalizeStatus::kLocalized}};
  }
  if (result.together) {
    json together = json::array();
    for (const LocalizationUnit& unit : *result.together) together.push_back(unitToJson(unit));
    report["together"] = together;
  }
  if (result.causes) report["causes"] = causesToJson(*result.causes);
  if (result.culprit_operators)
    report["culprit_operators"] = operatorsToJson(*result.culprit_operators);
  if (result.numerics_onset)
    report["numerics_onset"] = onsetAgreementToJson(*result.numerics_onset);
  if (result.budget) {
    report["all_causes"] = result.all_causes;
    report["budget"] = budgetToJson(*result.budget, result.runs.size());
  }
  if (result.pass_applications) report["pass_applications"] = *result.pass_applications;
  if (const auto& pass = result.pass_culprit) {
    report["pass_culprit"] = {{"application", pass->application},
                              {"pass", pass->pass},
                              {"op", pass->op},
                              {"module", pass->module},
                              {"into_op", pass->into_op},
                              {"into_module", pass->into_module}};
  }
  return report;
}

}  // namespace stickler
