// stale_adapters: adapters are scaffolding; this says which ones a profile no longer needs,
// with the proof: each model the adapter changes still passes end to end without it.
#include <set>

#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "simulator/run/run_model.h"
#include "simulator/support/errors.h"
#include "tools/adapter_support.h"
#include "tools/operation_table.h"
#include "tools/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

struct Outcome {
  RunVerdict verdict = RunVerdict::kFail;
  int64_t fallbacks = 0;  // CPU-fallback operators: an adapter may exist to remove them
};

// The model with `entries` applied (those that change it and pass their check), run end to end
// on the profile; `applied` gets the adapters that were applied.
Outcome outcomeWith(ModelCache& cache, const std::string& path,
                    const std::shared_ptr<const LoadedModel>& original,
                    const std::vector<const CatalogEntry*>& entries, const DeviceProfile& profile,
                    const std::string& profile_name, double timeout_seconds,
                    OperationContext& context, std::vector<std::string>* applied = nullptr) {
  AdapterStack stack(original);
  applyInOrder(stack, entries, profile, 0);
  cache.setAdapted(path, {}, original, stack.applied().empty() ? nullptr : stack.current());
  RunRequest request;
  request.model = path;
  request.backend = "spyre-sim:" + profile_name;
  request.timeout_seconds = timeout_seconds;
  const RunResult result = runModel(request, context.task(), &cache);
  if (applied != nullptr) *applied = stack.names();
  Outcome outcome{result.verdict, 0};
  if (result.compile) outcome.fallbacks = static_cast<int64_t>(result.compile->fallbacks.size());
  return outcome;
}

json run(const json& input, OperationContext& context) {
  const std::string profile_name = resolveProfile(requireString(input, "profile"), context);
  const DeviceProfile profile = loadProfile(profile_name);
  const std::vector<std::string> models = optionalStrings(input, "models");
  if (models.empty()) throw UserError("give at least one model to prove on (models)");
  const double timeout_seconds = input.at("timeout_seconds").get<double>();
  const auto catalog = adapterCatalog(context);

  std::map<std::string, json> proofs;  // adapter -> [{model, with, without}]
  for (const std::string& given : models) {
    const std::string path = context.resolvePath(given);
    ModelCache cache;
    const auto original = cache.original(path, {});
    const std::vector<const CatalogEntry*> meant = adaptersMeantFor(catalog, *original, nullptr);
    std::vector<std::string> applied;
    const Outcome with = outcomeWith(cache, path, original, meant, profile, profile_name,
                                     timeout_seconds, context, &applied);
    for (const std::string& name : applied) {
      std::vector<const CatalogEntry*> others;
      for (const CatalogEntry* entry : meant) {
        if (entry->name != name) others.push_back(entry);
      }
      const Outcome without = outcomeWith(cache, path, original, others, profile, profile_name,
                                          timeout_seconds, context);
      proofs[name].push_back({{"model", cardOf(*original).name},
                              {"path", path},
                              {"with_all_adapters", runVerdictName(with.verdict)},
                              {"without_it", runVerdictName(without.verdict)},
                              {"fallbacks_with", with.fallbacks},
                              {"fallbacks_without", without.fallbacks}});
    }
  }

  json adapters = json::array();
  json stale = json::array();
  json untested = json::array();
  for (const CatalogEntry& entry : catalog) {
    if (!entry.file) continue;
    auto proof = proofs.find(entry.name);
    if (proof == proofs.end()) {
      untested.push_back(entry.name);
      continue;
    }
    bool needed = false;
    // Needed while some model fails without it, or falls back to the CPU more often.
    for (const auto& item : proof->second) {
      needed = needed || item["without_it"] != runVerdictName(RunVerdict::kPass) ||
               item["fallbacks_without"].get<int64_t>() > item["fallbacks_with"].get<int64_t>();
    }
    if (!needed) stale.push_back(entry.name);
    adapters.push_back(
        {{"name", entry.name},
         {"stale", !needed},
         {"listed_for_profile", adapterTargetsProfile(entry.file->metadata, profile.lineage)},
         {"remove_when", entry.file->metadata.remove_when},
         {"proof", proof->second}});
  }
  return {{"schema", "stickler.stale"}, {"version", 1},   {"profile", profile.name},
          {"adapters", adapters},       {"stale", stale}, {"untested", untested}};
}

std::string renderText(const json& report) {
  std::string text;
  for (const auto& adapter : report["adapters"]) {
    text += adapter["name"].get<std::string>() +
            (adapter["stale"].get<bool>() ? ": stale on " : ": still needed on ") +
            report["profile"].get<std::string>() + "\n";
    for (const auto& proof : adapter["proof"]) {
      text += "  " + proof["model"].get<std::string>() + ": " +
              proof["without_it"].get<std::string>() + " without it (" +
              proof["with_all_adapters"].get<std::string>() + " with)";
      const int64_t more =
          proof["fallbacks_without"].get<int64_t>() - proof["fallbacks_with"].get<int64_t>();
      if (more > 0) text += ", " + std::to_string(more) + " more CPU fallback(s) without it";
      text += "\n";
    }
  }
  if (!report["untested"].empty()) {
    text += "not applied to any model given:";
    for (const auto& name : report["untested"]) text += " " + name.get<std::string>();
    text += "\n";
  }
  return text;
}

}  // namespace

Operation makeStaleAdaptersOperation() {
  Operation operation;
  operation.name = "stale_adapters";
  operation.title = "Find stale adapters";
  operation.description =
      "Adapters are scaffolding: this lists the ones a device profile no longer needs, with the "
      "proof. Each model given is adapted with every catalog adapter meant for it and run end "
      "to end on the profile; then once more without each adapter that applied. An adapter is "
      "stale when every model it changes still passes without it, with no more CPU fallbacks (e.g. "
      "the pow rewrites on "
      "spyre-2026, which lowers aten::pow). Adapters that change none of the models are listed "
      "as untested.";
  json schema = {
      {"type", "object"}, {"required", {"profile", "models"}}, {"additionalProperties", false}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["timeout_seconds"] = timeoutField();
  schema["properties"]["models"] = {
      {"type", "array"},
      {"items", {{"type", "string"}}},
      {"description",
       "Model archives to prove on (e.g. the models the adapters were written for)."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"schema", {{"const", "stickler.stale"}}},
                               {"stale", {{"type", "array"}}},
                               {"adapters", {{"type", "array"}}}}},
                             {"required", {"schema", "stale", "adapters"}}};
  operation.cli = {"adapters stale", {}, {{"models", "model"}, {"timeout_seconds", "timeout"}}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
