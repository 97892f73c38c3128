#include "tools/adapters/decode_summary.h"

#include <algorithm>
#include <cstdio>

#include "simulator/run/decode_cosines.h"
#include "simulator/support/text_format.h"
#include "tools/reports/result_json.h"

namespace stickler {

using nlohmann::json;

namespace {

std::string sixDigits(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", value);
  return text;
}

}  // namespace

json decodeAdaptationToJson(const DecodeAdaptation& adaptation) {
  json refused = json::array();
  for (const DecodeGraphRefusal& refusal : adaptation.refused) {
    refused.push_back(
        {{"graph", refusal.graph}, {"adapter", refusal.adapter}, {"reason", refusal.reason}});
  }
  return {{"prefill", adaptation.prefill_applied},
          {"decode_step", adaptation.step_applied},
          {"refused", refused}};
}

json decodeSummaryToJson(const RunResult& decode, const DecodeAdaptation& adaptation) {
  const DecodeReport& report = *decode.decode;
  json steps = json::array();
  for (const DecodeStepReport& step : report.per_step) {
    const auto& logits = step.logits.logits;
    steps.push_back(
        {{"step", step.step},
         {"token_agrees", step.reference_token == step.device_token},
         {"verdict", step.passed ? "pass" : "fail"},
         {"min_kv_cosine", numberOrNull(lowestKvCosine(step))},
         {"top5_relative_error", logits ? numberOrNull(logits->top5_relative_error) : json()},
         {"seconds", step.seconds}});
  }
  json summary = {{"steps", report.steps},
                  {"verdict", runVerdictName(decode.verdict)},
                  {"first_failing_step",
                   report.first_failing_step ? json(*report.first_failing_step) : json(nullptr)},
                  {"min_kv_cosine", numberOrNull(report.min_kv_cosine)},
                  {"per_step", steps},
                  {"adapters", decodeAdaptationToJson(adaptation)}};
  if (!report.blocked_graph.empty()) summary["blocked_graph"] = report.blocked_graph;
  const std::string reason = decodeFailureReason(decode);
  if (!reason.empty()) summary["reason"] = reason;
  return summary;
}

std::string decodeFailureReason(const RunResult& decode) {
  if (decode.verdict == RunVerdict::kPass || !decode.decode) return "";
  const DecodeReport& report = *decode.decode;
  const std::string verdict = runVerdictName(decode.verdict);
  if (!report.blocked_graph.empty()) {
    std::string text =
        verdict + ": the decode's " + report.blocked_graph + " graph does not compile";
    if (decode.compile && !decode.compile->blockers.empty()) {
      const BlockerReport& first = decode.compile->blockers.front();
      text += " (" + std::to_string(decode.compile->blockers.size()) + " blocker(s), first " +
              first.rule + " " + first.op + " in " + first.module + ")";
    }
    return text;
  }
  if (decode.run && decode.run->status != "completed") {
    const int64_t step = static_cast<int64_t>(report.per_step.size());
    return verdict + ": decode step " + std::to_string(step) + "'s device run " +
           decode.run->status + ": " + firstLine(decode.run->message);
  }
  if (!report.first_failing_step) return verdict;
  const DecodeStepReport& step = report.per_step.at(*report.first_failing_step);
  std::string text =
      verdict + ": " +
      (step.step == 0 ? std::string("the prefill") : "decode step " + std::to_string(step.step)) +
      " of " + std::to_string(report.steps) + " fails";
  if (step.reference_token != step.device_token) {
    text += ": the device's greedy token is " + std::to_string(step.device_token) +
            ", the reference's " + std::to_string(step.reference_token);
  } else if (!step.logits.reason.empty()) {
    text += ": " + step.logits.reason;
  }
  if (const auto lowest = lowestKvCosine(step)) {
    text += " (KV cache cosine down to " + sixDigits(*lowest) + ")";
  }
  return text;
}

}  // namespace stickler
