#include "tools/reports/result_json.h"

namespace stickler {

using nlohmann::json;

json numberOrNull(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json modelIdentityToJson(const ModelIdentity& model) {
  return {{"path", model.path},
          {"sha256", model.sha256},
          {"name", model.name},
          {"adapters", model.adapters}};
}

void addPlacement(json& report, const Placement& placement, int64_t host_nodes) {
  report["placement"] =
      placement.wholeModel() ? json("whole model") : json(placement.device_modules);
  if (!placement.host_modules.empty()) report["host_modules"] = placement.host_modules;
  if (host_nodes != 0) report["host_nodes"] = host_nodes;
}

json valueDescsToJson(const std::vector<ValueDesc>& descs) {
  json list = json::array();
  for (const ValueDesc& desc : descs) {
    json entry{{"kind", desc.kind}};
    if (desc.kind == "Tensor") {
      entry["shape"] = desc.shape;
      entry["dtype"] = desc.dtype;
    } else if (!desc.value.empty()) {
      entry["value"] = desc.value;
    }
    list.push_back(entry);
  }
  return list;
}

json sourceLineToJson(const std::optional<SourceLine>& line) {
  if (!line) return nullptr;
  return {{"file", line->file}, {"line", line->line}};
}

json compileReportToJson(const CompileReport& report) {
  json blockers = json::array();
  for (const BlockerReport& blocker : report.blockers) {
    blockers.push_back(
        {{"rule", blocker.rule},
         {"op", blocker.op},
         {"module", blocker.module},
         {"module_class", blocker.module_class},
         {"node_index", blocker.node_index},
         {"source",
          {{"code", sourceLineToJson(blocker.code)}, {"python", sourceLineToJson(blocker.python)}}},
         {"message", blocker.message},
         {"inputs", valueDescsToJson(blocker.inputs)},
         {"outputs", valueDescsToJson(blocker.outputs)}});
  }
  json fallbacks = json::array();
  for (const FallbackReport& fallback : report.fallbacks) {
    fallbacks.push_back({{"op", fallback.op},
                         {"module", fallback.module},
                         {"node_index", fallback.node_index},
                         {"bytes_to_host", fallback.bytes_to_host},
                         {"bytes_to_device", fallback.bytes_to_device}});
  }
  json document{
      {"status", compileStatusName(report.status)},
      {"profile", report.profile},
      {"blockers", blockers},
      {"blocker_counts",
       {{"by_rule", report.blockers_by_rule}, {"unsupported_ops", report.unsupported_ops}}},
      {"fallbacks",
       {{"count", report.fallbacks.size()},
        {"by_op", report.fallbacks_by_op},
        {"transfers", report.transfers},
        {"transfer_bytes", report.transfer_bytes},
        {"transfer_seconds", report.transfer_seconds},
        {"nodes", fallbacks}}},
      {"kernels",
       {{"count", report.kernels},
        {"device_nodes", report.device_nodes},
        {"fused", report.fused_kernels}}}};
  if (report.compiler_error) document["compiler_error"] = *report.compiler_error;
  return document;
}

nlohmann::json reproToJson(const ReproBundle& bundle) {
  nlohmann::json document = {{"directory", bundle.directory}, {"archive", bundle.archive},
                             {"command", bundle.command},     {"reproduces", bundle.reproduces},
                             {"observed", bundle.observed},   {"scope", bundle.scope},
                             {"grown", bundle.grown},         {"seconds", bundle.seconds}};
  if (const auto& check = bundle.numerics) {
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& error : check->relative_l2) errors.push_back(numberOrNull(error));
    nlohmann::json reference = nlohmann::json::array();
    for (const auto& error : check->reference_relative_l2_float64) {
      reference.push_back(numberOrNull(error));
    }
    nlohmann::json numerics = {{"tolerances", check->tolerances},
                               {"relative_l2", errors},
                               {"reference_relative_l2_float64", reference}};
    if (!check->clean_profile.empty()) {
      numerics["clean_profile"] = check->clean_profile;
      numerics["clean_command"] = check->clean_command;
      numerics["clean_passes"] = check->clean_passes.value_or(false);
      numerics["clean_observed"] = check->clean_observed;
    }
    document["numerics"] = std::move(numerics);
  }
  return document;
}

json outputComparisonToJson(const OutputComparison& comparison) {
  json outputs = json::array();
  for (const OutputReport& output : comparison.outputs) {
    json entry{
        {"name", output.name}, {"kind", outputKindName(output.kind)}, {"shape", output.shape}};
    if (output.verdict) entry["verdict"] = outputVerdictName(*output.verdict);
    if (!output.reason.empty()) entry["reason"] = output.reason;
    if (output.equal) entry["equal"] = *output.equal;
    if (const auto& metrics = output.metrics) {
      entry["non_finite"] = metrics->non_finite;
      entry["max_abs_error"] = numberOrNull(metrics->max_abs_error);
      entry["mean_abs_error"] = numberOrNull(metrics->mean_abs_error);
      entry["relative_l2"] = numberOrNull(metrics->relative_l2);
      entry["cosine"] = numberOrNull(metrics->cosine);
    }
    if (output.relative_l2_tolerance) {
      entry["relative_l2_tolerance"] = *output.relative_l2_tolerance;
    }
    if (const auto& logits = output.logits) {
      entry["logits"] = {{"positions", logits->positions},
                         {"top1_agree", logits->top1_agree},
                         {"top1_ambiguous", logits->top1_ambiguous},
                         {"top1_disagree", logits->top1_disagree},
                         {"top5_relative_error", numberOrNull(logits->top5_relative_error)},
                         {"tolerance", logits->tolerance}};
    }
    outputs.push_back(std::move(entry));
  }
  return outputs;
}

}  // namespace stickler
