// rank_blockers: across many models, which compile blockers stop the most of them, so that the
// backend team builds the most blocking operator (or layout rule) first.
#include <map>
#include <set>

#include "simulator/device/device_profile.h"
#include "simulator/graph/model_cache.h"
#include "simulator/lowering/check_support.h"
#include "simulator/support/errors.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

struct Tally {
  std::set<std::string> models;
  int64_t occurrences = 0;
  std::set<std::string> module_classes;
};

json run(const json& input, OperationContext& context) {
  const std::string profile_name = resolveProfile(requireString(input, "profile"), context);
  const DeviceProfile profile = loadProfile(profile_name);
  const std::vector<std::string> models = optionalStrings(input, "models");
  if (models.empty()) throw UserError("give at least one model to rank blockers over (models)");
  std::map<std::pair<std::string, std::string>, Tally> tallies;  // (rule, op) -> tally
  json per_model = json::array();
  ModelCache local;
  ModelCache* cache = context.models() != nullptr ? context.models() : &local;
  for (size_t i = 0; i < models.size(); ++i) {
    context.task().checkCancelled();
    context.task().progress(static_cast<double>(i), static_cast<double>(models.size()),
                            "lowering " + models[i]);
    const std::string path = context.resolvePath(models[i]);
    CheckSupportRequest request;
    request.model = path;
    request.profile = profile_name;
    const CheckSupportResult result = checkSupport(request, {}, cache);
    for (const BlockerReport& blocker : result.compile.blockers) {
      Tally& tally = tallies[{blocker.rule, blocker.op}];
      tally.models.insert(result.model.name);
      ++tally.occurrences;
      tally.module_classes.insert(blocker.module_class);
    }
    per_model.push_back({{"model", result.model.name},
                         {"path", path},
                         {"blockers", result.compile.blockers.size()},
                         {"compiles", result.compile.status == CompileStatus::kOk}});
  }
  json ranking = json::array();
  for (const auto& [key, tally] : tallies) {
    ranking.push_back({{"rule", key.first},
                       {"op", key.second},
                       {"models_blocked", tally.models.size()},
                       {"occurrences", tally.occurrences},
                       {"models", tally.models},
                       {"module_classes", tally.module_classes}});
  }
  // The blocker that stops the most models first; then the most occurrences.
  std::stable_sort(ranking.begin(), ranking.end(), [](const json& a, const json& b) {
    if (a["models_blocked"] != b["models_blocked"])
      return a["models_blocked"] > b["models_blocked"];
    return a["occurrences"] > b["occurrences"];
  });
  return {{"schema", "stickler.blocker_ranking"},
          {"version", 1},
          {"profile", profile.name},
          {"models", per_model},
          {"ranking", ranking}};
}

std::string renderText(const json& report) {
  size_t blocked = 0;
  for (const auto& model : report["models"]) blocked += model["compiles"] ? 0 : 1;
  std::string text = std::to_string(blocked) + " of " + std::to_string(report["models"].size()) +
                     " models blocked on " + report["profile"].get<std::string>() + "\n";
  for (const auto& entry : report["ranking"]) {
    text += "  " + std::to_string(entry["models_blocked"].get<int64_t>()) + " models, " +
            std::to_string(entry["occurrences"].get<int64_t>()) + "x  [" +
            entry["rule"].get<std::string>() + "] " + entry["op"].get<std::string>() + " (";
    std::string models;
    for (const auto& name : entry["models"])
      models += (models.empty() ? "" : ", ") + name.get<std::string>();
    text += models + ")\n";
  }
  return text;
}

}  // namespace

Operation makeRankBlockersOperation() {
  Operation operation;
  operation.name = "rank_blockers";
  operation.title = "Rank compile blockers across models";
  operation.description =
      "Lower many models for a device profile and rank the blockers by how many models each "
      "stops (then by occurrences): rule and operator, the models, the module classes they "
      "sit in. What to build first in the backend, or which adapter to write first.";
  json schema = {
      {"type", "object"}, {"required", {"profile", "models"}}, {"additionalProperties", false}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["models"] = {{"type", "array"},
                                    {"items", {{"type", "string"}}},
                                    {"description", "Model archives to lower."}};
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.blocker_ranking"}}}, {"ranking", {{"type", "array"}}}}},
      {"required", {"schema", "ranking"}}};
  operation.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  operation.cli = {"blockers", {}, {{"models", "model"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
