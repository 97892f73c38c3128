// stale_adapters: adapters are scaffolding; this says which ones a profile no longer needs,
// with the proof: each model the adapter changes still passes end to end without it.
#include <set>

#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "simulator/run/run_model.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"
#include "tools/adapters/bring_up.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

struct Outcome {
  RunVerdict verdict = RunVerdict::kFail;
  int64_t fallbacks = 0;  // CPU-fallback operators: an adapter may exist to remove them
  bool decoded = false;   // the verdict is the decode's (the forward passed)
};

// How a model is run: the profile, the run's timeout, and the decode steps that judge a decoder.
struct Judging {
  const DeviceProfile& profile;
  std::string profile_name;
  double timeout_seconds = 0;
  int64_t decode_steps = 0;
};

// The model with `entries` applied (those that change it and pass their check), run end to end
// on the profile; a decoder whose forward passes is then decoded with the same adapters on its
// prefill and step graphs, as the gate and a sweep judge it: an adapter only its decode needs
// (prescale-mean-of-squares) is not stale. `applied` gets the adapters that were applied.
Outcome outcomeWith(ModelCache& cache, const std::string& path,
                    const std::shared_ptr<const LoadedModel>& original,
                    const std::vector<const CatalogEntry*>& entries, const Judging& judging,
                    OperationContext& context, std::vector<std::string>* applied = nullptr) {
  AdapterStack stack(original);
  stackAdapters(stack, entries, judging.profile);
  cache.setAdapted(path, {}, original, stack.applied().empty() ? nullptr : stack.current());
  RunRequest request;
  request.model = path;
  request.backend = spyreSimBackend(judging.profile_name);
  request.timeout_seconds = judging.timeout_seconds;
  const RunResult result = runModel(request, context.task(), &cache);
  if (applied != nullptr) *applied = stack.names();
  Outcome outcome{result.verdict, 0};
  if (result.compile) outcome.fallbacks = static_cast<int64_t>(result.compile->fallbacks.size());
  if (result.verdict != RunVerdict::kPass || judging.decode_steps == 0 ||
      !cardOf(*original).decode) {
    return outcome;
  }
  outcome.verdict =
      decodeWithAdapters({path, 0, stack, entries, judging.profile, judging.profile_name, true,
                          judging.decode_steps, judging.timeout_seconds},
                         context.task())
          .run.verdict;
  outcome.decoded = true;
  return outcome;
}

// The adapters to try on a model, in the order a profile gets them: those listed for the profile
// or a profile it extends first (what its adapt runs), then those listed only for other profiles,
// so that an adapter another profile needs cannot change what this profile's own ones match
// (pow-square-as-mul, for spyre-2025, rewriting the pow(2) a spyre-2026 adapter matches).
std::vector<const CatalogEntry*> profileOrder(const std::vector<const CatalogEntry*>& meant,
                                              const DeviceProfile& profile) {
  std::vector<const CatalogEntry*> ordered;
  for (const CatalogEntry* entry : meant) {
    if (adapterTargetsProfile(entry->file->metadata, profile.lineage)) ordered.push_back(entry);
  }
  for (const CatalogEntry* entry : meant) {
    if (!adapterTargetsProfile(entry->file->metadata, profile.lineage)) ordered.push_back(entry);
  }
  return ordered;
}

// Why the profile gets an adapter, or why it is only tried.
std::string whyForProfile(const AdapterMetadata& metadata, const DeviceProfile& profile) {
  std::string listed;
  for (const auto& name : metadata.profiles) listed += (listed.empty() ? "" : ", ") + name;
  std::string lineage;
  for (const auto& name : profile.lineage) lineage += (lineage.empty() ? "" : ", ") + name;
  if (adapterTargetsProfile(metadata, profile.lineage)) {
    for (const auto& name : profile.lineage) {
      for (const auto& wanted : metadata.profiles) {
        if (wanted != name) continue;
        return name == profile.name ? "listed for " + name + ": applied first, as adapt does"
                                    : "listed for " + name + ", which " + profile.name +
                                          " extends: applied first, as adapt does";
      }
    }
  }
  return "listed for " + (listed.empty() ? std::string("no profile") : listed) + ", none of them " +
         profile.name + " or a profile it extends (" + lineage + "): adapt on " + profile.name +
         " does not apply it; tried after the profile's own "
         "adapters to see whether " +
         profile.name + " needs it";
}

json run(const json& input, OperationContext& context) {
  const std::string profile_name = resolveProfile(requireString(input, "profile"), context);
  const DeviceProfile profile = loadProfile(profile_name);
  const std::vector<std::string> models = optionalStrings(input, "models");
  if (models.empty()) throw UserError("give at least one model to prove on (models)");
  const Judging judging{profile, profile_name, input.at("timeout_seconds").get<double>(),
                        input.at("decode").get<int64_t>()};
  const auto catalog = adapterCatalog(context);

  std::map<std::string, json> proofs;  // adapter -> [{model, with, without}]
  for (const std::string& given : models) {
    const std::string path = context.resolvePath(given);
    ModelCache cache;
    const auto original = cache.original(path, {});
    const std::vector<const CatalogEntry*> meant =
        profileOrder(adaptersMeantFor(catalog, *original, nullptr), profile);
    std::vector<std::string> applied;
    const Outcome with = outcomeWith(cache, path, original, meant, judging, context, &applied);
    for (const std::string& name : applied) {
      std::vector<const CatalogEntry*> others;
      for (const CatalogEntry* entry : meant) {
        if (entry->name != name) others.push_back(entry);
      }
      const Outcome without = outcomeWith(cache, path, original, others, judging, context);
      const auto judged_by = [](const Outcome& outcome) {
        return outcome.decoded ? "decode" : "forward";
      };
      proofs[name].push_back({{"model", cardOf(*original).name},
                              {"path", path},
                              {"with_all_adapters", runVerdictName(with.verdict)},
                              {"without_it", runVerdictName(without.verdict)},
                              {"with_judged_by", judged_by(with)},
                              {"without_judged_by", judged_by(without)},
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
      untested.push_back(
          {{"name", entry.name},
           {"listed_for_profile", adapterTargetsProfile(entry.file->metadata, profile.lineage)},
           {"why", whyForProfile(entry.file->metadata, profile)}});
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
         {"why", whyForProfile(entry.file->metadata, profile)},
         {"remove_when", entry.file->metadata.remove_when},
         {"proof", proof->second}});
  }
  return {{"schema", "stickler.stale"}, {"version", 2},   {"profile", profile.name},
          {"adapters", adapters},       {"stale", stale}, {"untested", untested}};
}

std::string renderText(const json& report) {
  std::string text;
  for (const auto& adapter : report["adapters"]) {
    text += adapter["name"].get<std::string>() +
            (adapter["stale"].get<bool>() ? ": stale on " : ": still needed on ") +
            report["profile"].get<std::string>() + "\n";
    for (const auto& proof : adapter["proof"]) {
      const auto judged = [&](const char* key) {
        return proof.value(key, "forward") == "decode" ? std::string(" at decode") : std::string();
      };
      text += "  " + proof["model"].get<std::string>() + ": " +
              proof["without_it"].get<std::string>() + judged("without_judged_by") +
              " without it (" + proof["with_all_adapters"].get<std::string>() +
              judged("with_judged_by") + " with)";
      const int64_t more =
          proof["fallbacks_without"].get<int64_t>() - proof["fallbacks_with"].get<int64_t>();
      if (more > 0) text += ", " + std::to_string(more) + " more CPU fallback(s) without it";
      text += "\n";
    }
  }
  if (!report["untested"].empty()) {
    text += "not applied to any model given:";
    for (const auto& adapter : report["untested"]) text += " " + adapter["name"].get<std::string>();
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
      "to end on the profile; then once more without each adapter that applied. A decoder whose "
      "forward passes is judged by its decode (decode steps, as the gate and a sweep judge it). "
      "An adapter is stale when every model it changes still passes without it, with no more "
      "CPU fallbacks (e.g. pow-cube-as-mul on spyre-2026, which lowers aten::pow). The adapters "
      "listed for the profile (or a profile it extends) are applied first, in catalog order, as "
      "adapt_model applies them; those listed "
      "only for other profiles after them, so they cannot hide what the profile's own adapters "
      "match; each adapter says why (why, listed_for_profile). Adapters that change none of the "
      "models are listed as untested.";
  json schema = {
      {"type", "object"}, {"required", {"profile", "models"}}, {"additionalProperties", false}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["timeout_seconds"] = timeoutField();
  schema["properties"]["decode"] = judgeDecodeField();
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
