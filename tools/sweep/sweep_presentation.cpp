#include "tools/sweep/sweep_presentation.h"

namespace stickler {

using nlohmann::json;

std::string renderSweepText(const json& sweep) {
  const json& summary = sweep["summary"];
  std::string text = sweep["id"].get<std::string>() + " on " + sweep["profile"].get<std::string>();
  if (sweep["shard"]["count"].get<size_t>() > 1) {
    text +=
        " (shard " + sweep["shard"]["index"].dump() + "/" + sweep["shard"]["count"].dump() + ")";
  }
  text += ": " + summary["models"].dump() + " models, " + summary["covered"].dump() +
          " compile with the adapters they have, " + summary["passing"].dump() +
          " pass end to end\n";
  const json& run = sweep.value("run", json::object());
  text += "  probed " + run.value("probed", json(0)).dump() + ", resumed " +
          run.value("resumed", json(0)).dump() + ", reused from history " +
          run.value("reused", json(0)).dump() + "\n";
  for (const auto& [kind, count] : summary["by_category"].items()) {
    text += "  " + kind + ": " + count.dump() + "\n";
  }
  if (!summary["blockers"].empty()) {
    text += "blocks the most models:\n";
    size_t shown = 0;
    for (const json& blocker : summary["blockers"]) {
      if (shown++ == 5) break;
      text += "  " + blocker["blocker"].get<std::string>() + ": " + blocker["models"].dump() + "\n";
    }
  }
  if (sweep.contains("diff")) {
    const json& diff = sweep["diff"];
    text += "since " + diff["previous"].get<std::string>() + ": " +
            std::to_string(diff["newly_broken"].size()) + " newly broken, " +
            std::to_string(diff["newly_fixed"].size()) + " newly fixed\n";
    for (const json& change : diff["newly_broken"]) {
      text += "  broken: " + change.value("name", change.value("model", "")) + ": " +
              change.value("before", "") + " -> " + change.value("after", "") + "\n";
    }
  }
  if (sweep.contains("out")) {
    text += "written to " + sweep["out"].get<std::string>() + " (sweep.json, junit.xml" +
            (sweep["shard"]["count"].get<size_t>() == 1 ? ", report.html" : "") + ")\n";
  }
  return text;
}

json sweepOutputSchema() {
  return {{"type", "object"},
          {"properties",
           {{"schema", {{"const", "stickler.sweep"}}},
            {"id", {{"type", "string"}}},
            {"summary", {{"type", "object"}}},
            {"models", {{"type", "array"}}}}},
          {"required", {"schema", "id", "summary", "models"}}};
}

json retentionProperties() {
  return {{"keep_sweeps",
           {{"type", "integer"},
            {"minimum", 1},
            {"default", 400},
            {"description", "Sweeps kept in history, newest first; older ones are deleted."}}},
          {"keep_days",
           {{"type", "integer"},
            {"minimum", 0},
            {"default", 30},
            {"description",
             "Saved reports and repro bundles older than this many days are "
             "deleted."}}}};
}

json pagedSweep(json sweep, size_t limit) {
  if (limit == 0 || sweep["models"].size() <= limit) return sweep;
  json listed = json::array();
  for (const json& entry : sweep["models"]) {
    if (entry.value("verdict", "") == "pass" || entry.value("category", "") == "lowered only") {
      continue;
    }
    if (listed.size() == limit) break;
    listed.push_back(entry);
  }
  sweep["models_total"] = sweep["models"].size();
  sweep["models"] = listed;
  sweep["models_note"] = "the first " + std::to_string(listed.size()) +
                         " models that do not pass; every model is in " +
                         sweep.value("out", std::string("the output directory")) + "/sweep.json";
  return sweep;
}

RetentionPolicy retentionFromInput(const json& input) {
  RetentionPolicy policy;
  policy.keep_sweeps = input.at("keep_sweeps").get<size_t>();
  policy.keep_days = input.at("keep_days").get<int>();
  return policy;
}

}  // namespace stickler
