#include "tools/adapters/adapter_json.h"

#include <map>

namespace stickler {

namespace {

nlohmann::json countedNodes(const std::vector<ChangedNode>& nodes, size_t limit) {
  // Keyed by module then op, so that the list reads in module order.
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const ChangedNode& node : nodes) ++counts[{node.module, node.op}];
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [key, count] : counts) {
    if (limit != 0 && list.size() == limit) break;
    list.push_back({{"op", key.second}, {"module", key.first}, {"count", count}});
  }
  return list;
}

const char* verdictName(EquivalenceResult::Verdict verdict) {
  switch (verdict) {
    case EquivalenceResult::Verdict::kUnchanged:
      return "unchanged";
    case EquivalenceResult::Verdict::kEquivalent:
      return "equivalent";
    case EquivalenceResult::Verdict::kDifferentMath:
      return "different_math";
    case EquivalenceResult::Verdict::kWorseInFloat32:
      return "worse_in_float32";
  }
  return "unchanged";
}

}  // namespace

nlohmann::json graphChangeToJson(const GraphChange& change, size_t limit) {
  return {{"rewrites", change.rewrites},
          {"nodes_removed", change.removed.size()},
          {"nodes_added", change.added.size()},
          {"removed", countedNodes(change.removed, limit)},
          {"added", countedNodes(change.added, limit)},
          {"placed_on_host", change.placed_on_host},
          {"nodes_on_host", countedNodes(change.nodes_on_host, limit)},
          {"folded", change.folded},
          {"not_folded", change.not_folded},
          {"fixes_shapes", change.fixes_shapes}};
}

nlohmann::json adapterMatchToJson(const AdapterMatch& match) {
  auto counts = [](const std::vector<BlockerCount>& list) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& count : list) {
      array.push_back({{"rule", count.rule},
                       {"op", count.op},
                       {"module", count.module},
                       {"count", count.count}});
    }
    return array;
  };
  return {{"name", match.name},
          {"origin", match.origin},
          {"applies", match.applies},
          {"for_profile", match.for_profile},
          {"for_model", match.for_model},
          {"rewrites", match.rewrites},
          {"reason", match.reason},
          {"clears", counts(match.clears)},
          {"introduces", counts(match.introduces)}};
}

nlohmann::json equivalenceToJson(const EquivalenceResult& result) {
  const AgreementSummary& agreement = result.agreement;
  nlohmann::json json = {
      {"verdict", verdictName(result.verdict)},
      {"accepted", result.accepted()},
      {"reference", "the model before this change, in float64 (the truth) and in float32"},
      {"scope", result.scope},
      {"inputs_checked", result.inputs_checked},
      {"outputs_compared", agreement.outputs_compared}};
  if (!result.modules.empty()) json["modules"] = result.modules;
  if (!result.why_whole.empty()) json["why_whole_model"] = result.why_whole;
  if (!result.region_problem.empty()) json["region_problem"] = result.region_problem;
  if (result.verdict != EquivalenceResult::Verdict::kUnchanged) {
    json["float64"] = {{"max_ratio_to_tolerance", agreement.float64_ratio},
                       {"difference", agreement.float64_difference},
                       {"tolerance", agreement.float64_tolerance},
                       {"margin", kFloat64Margin}};
    json["float32"] = {{"error_original", agreement.float32_error_original},
                       {"error_adapted", agreement.float32_error_adapted},
                       {"factor", agreement.float32_factor},
                       {"allowed_factor", kFloat32Factor}};
  }
  json["bitwise_equal"] = agreement.bitwise;
  json["max_ulps"] = agreement.max_ulps;
  json["stated_max_ulps"] = result.stated_max_ulps;
  json["blas"] = blasLibrary();
  if (!agreement.problem.empty()) json["problem"] = agreement.problem;
  return json;
}

}  // namespace stickler
