#include "tools/model/run_report.h"

#include "simulator/run/decode_cosines.h"
#include "tools/framework/exit_status.h"
#include "tools/reports/result_json.h"

namespace stickler {

using nlohmann::json;

namespace {

json deviceRunToJson(const DeviceRunReport& run) {
  json entry{{"status", run.status}, {"seconds", run.seconds}};
  if (run.status == "completed") return entry;
  entry["message"] = run.message;
  if (!run.device_log.empty()) entry["device_log"] = run.device_log;
  if (run.signal != 0) entry["signal"] = run.signal;
  entry["nodes_run"] = run.nodes_run;
  if (run.module) entry["module"] = *run.module;
  if (run.module_class) entry["module_class"] = *run.module_class;
  if (run.last_module_entered) entry["last_module_entered"] = *run.last_module_entered;
  if (run.op) entry["op"] = *run.op;
  if (run.source) entry["source"] = sourceLineToJson(run.source);
  return entry;
}

json cosinesToJson(const std::vector<std::optional<double>>& cosines) {
  json values = json::array();
  for (const auto& value : cosines) values.push_back(numberOrNull(value));
  return values;
}

}  // namespace

json decodeReportToJson(const DecodeReport& decode) {
  json steps = json::array();
  for (const DecodeStepReport& step : decode.per_step) {
    OutputComparison logits;
    logits.outputs = {step.logits};
    steps.push_back({{"step", step.step},
                     {"slot", step.slot},
                     {"reference_token", step.reference_token},
                     {"device_token", step.device_token},
                     {"token_agrees", step.reference_token == step.device_token},
                     {"verdict", step.passed ? "pass" : "fail"},
                     {"seconds", step.seconds},
                     {"logits", outputComparisonToJson(logits).at(0)},
                     {"min_kv_cosine", numberOrNull(lowestKvCosine(step))},
                     {"key_cosine", cosinesToJson(step.key_cosine)},
                     {"value_cosine", cosinesToJson(step.value_cosine)}});
  }
  json entry{{"steps", decode.steps},
             {"prompt_length", decode.prompt_length},
             {"prompt_tokens", decode.prompt_tokens},
             {"max_length", decode.max_length},
             {"methods", {{"prefill", decode.prefill_method}, {"step", decode.step_method}}},
             {"fed", "reference"},
             {"per_step", steps},
             {"first_failing_step",
              decode.first_failing_step ? json(*decode.first_failing_step) : json(nullptr)},
             {"min_kv_cosine", numberOrNull(decode.min_kv_cosine)},
             {"passed", decode.passed}};
  if (!decode.blocked_graph.empty()) entry["blocked_graph"] = decode.blocked_graph;
  return entry;
}

json runReport(const RunResult& result) {
  json backend{{"spec", result.backend}, {"format", formatName(result.format)}};
  if (result.profile) backend["profile"] = profileSummary(*result.profile);
  json report{
      {"schema", "stickler.run"},
      {"version", 1},
      {"model", modelIdentityToJson(result.model)},
      {"backend", backend},
      {"compile", result.compile ? compileReportToJson(*result.compile) : json{{"status", "ok"}}},
      {"verdict", runVerdictName(result.verdict)},
      {"exit_status", exitCode(exitStatusOf(result.verdict))}};
  addPlacement(report, result.placement, result.host_nodes);
  if (result.run) report["run"] = deviceRunToJson(*result.run);
  if (const auto& comparison = result.comparison) {
    report["comparison"] = {{"reference", "cpu"},
                            {"settings",
                             {{"embedding_cosine", comparison->embedding_cosine},
                              {"logit_tolerance", comparison->logit_tolerance}}},
                            {"outputs", outputComparisonToJson(comparison->outputs)}};
  }
  if (result.decode) report["decode"] = decodeReportToJson(*result.decode);
  return report;
}

}  // namespace stickler
