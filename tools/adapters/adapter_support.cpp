#include "tools/adapters/adapter_support.h"
#include "tools/adapters/adapter_json.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/engine/adapter_matching.h"
#include "adapters/engine/adapter_stacking.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/sha256.h"
#include "simulator/support/task_control.h"
#include "tools/framework/operation_table.h"

namespace stickler {

using nlohmann::json;

std::string workspaceCatalogDir(OperationContext& context) {
  return (std::filesystem::path(context.workspaceRoot()) / "stickler-adapters").string();
}

namespace {

// Main's version of an adapter, named by where it came from: the shipped text, a review's
// approval (the last commit on main that changed the file says so), or another change.
std::string mainStatus(const WorkspaceCatalog& catalog, const CatalogEntry& entry,
                       const std::vector<CatalogEntry>& shipped) {
  for (const CatalogEntry& original : shipped) {
    if (original.name == entry.name && original.text == entry.text) return "shipped";
  }
  const std::string file = entry.name + ".py";
  for (const CatalogCommit& commit : catalog.history(entry.name)) {
    if (commit.branch != "main") continue;
    if (std::find(commit.files_changed.begin(), commit.files_changed.end(), file) ==
        commit.files_changed.end()) {
      continue;
    }
    for (const auto& [key, value] : commit.trailers) {
      if (key == "Stickler-Action" && value == "approve") return "accepted";
    }
    return "workspace";
  }
  return "workspace";
}

// The SHA-256 of the text an adapter was parsed from: kept with its parse by the catalog that
// read it, else (an entry that does not parse) computed.
std::string sourceSha256(const CatalogEntry& entry) {
  if (entry.file && !entry.file->source_sha256.empty()) return entry.file->source_sha256;
  return sha256Bytes(entry.text);
}

}  // namespace

std::vector<CatalogEntry> adapterCatalog(OperationContext& context) {
  auto shipped = readCatalogDir(shippedCatalogDir(), "shipped");
  for (CatalogEntry& entry : shipped) entry.status = "shipped";
  const std::string dir = workspaceCatalogDir(context);
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::path(dir) / ".git", error)) return shipped;
  std::vector<CatalogEntry> workspace;
  const WorkspaceCatalog catalog = WorkspaceCatalog::open(dir);
  for (const CatalogAdapter& adapter : catalog.list()) {
    const bool draft = adapter.branch != "main";
    CatalogEntry entry = catalogEntryFromText(
        adapter.name, catalog.read(adapter.name, adapter.branch), dir + "/" + adapter.name + ".py",
        draft ? "workspace draft" : "workspace");
    entry.branch = adapter.branch;
    entry.status = draft ? "draft" : mainStatus(catalog, entry, shipped);
    workspace.push_back(std::move(entry));
  }
  return mergeCatalogs(std::move(shipped), std::move(workspace));
}

std::vector<CatalogEntry> catalogAtTree(const WorkspaceCatalog& catalog, const std::string& tree,
                                        const std::vector<std::string>& unreviewed) {
  const std::set<std::string> proposed(unreviewed.begin(), unreviewed.end());
  std::vector<CatalogEntry> workspace;
  for (const auto& [name, text] : catalog.adaptersAt(tree)) {
    const bool is_proposed = proposed.count(name) > 0;
    workspace.push_back(catalogEntryFromText(name, text, (catalog.dir() / (name + ".py")).string(),
                                             is_proposed ? "workspace draft" : "workspace"));
  }
  return mergeCatalogs(readCatalogDir(shippedCatalogDir(), "shipped"), std::move(workspace));
}

std::vector<CatalogEntry> acceptedCatalog(OperationContext& context) {
  const std::string dir = workspaceCatalogDir(context);
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::path(dir) / ".git", error)) {
    return readCatalogDir(shippedCatalogDir(), "shipped");
  }
  const WorkspaceCatalog catalog = WorkspaceCatalog::open(dir);
  return catalogAtTree(catalog, catalog.mainCommit(), {});
}

ModelAdapters::ModelAdapters(OperationContext& context, const std::string& model_path,
                             const std::vector<std::string>& input_flags)
    : path_(model_path), input_flags_(input_flags) {
  cache_ = context.models();
  if (cache_ == nullptr) {
    local_cache_ = std::make_unique<ModelCache>();
    cache_ = local_cache_.get();
  }
  AdapterStacks* stacks = context.adapterStacks();
  if (stacks == nullptr) {
    local_stacks_ = std::make_unique<AdapterStacks>();
    stacks = local_stacks_.get();
  }
  lock_ = std::unique_lock<std::mutex>(stacks->mutex());
  std::string key = model_path;
  for (const auto& flag : input_flags) key += '\n' + flag;
  stack_ = &stacks->stackFor(key, cache_->original(model_path, input_flags));
}

void ModelAdapters::publish() {
  cache_->setAdapted(path_, input_flags_, stack_->original(),
                     stack_->applied().empty() ? nullptr : stack_->current());
}

std::string recordEvidence(OperationContext& context, const std::string& adapter,
                           const std::string& origin, const std::string& summary,
                           const std::vector<std::pair<std::string, std::string>>& trailers) {
  if (origin.rfind("workspace", 0) != 0) return "";
  WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  return catalog.recordEvidence(adapter, summary, trailers).commit_id;
}

std::vector<const CatalogEntry*> adaptersMeantFor(const std::vector<CatalogEntry>& catalog,
                                                  const LoadedModel& model,
                                                  const DeviceProfile* profile) {
  std::vector<const CatalogEntry*> meant;
  for (const CatalogEntry& entry : catalog) {
    if (!entry.file) continue;
    const AdapterMetadata& metadata = entry.file->metadata;
    if ((profile == nullptr || adapterTargetsProfile(metadata, profile->lineage)) &&
        adapterTargetsModel(metadata, cardOf(model).family, cardOf(model).name)) {
      meant.push_back(&entry);
    }
  }
  return meant;
}

std::shared_ptr<const LoadedModel> modelToDiagnose(OperationContext& context,
                                                   const std::string& model_path,
                                                   const std::vector<std::string>& input_flags,
                                                   const DeviceProfile* adapt_for,
                                                   nlohmann::json* applied,
                                                   const BeforeReference& before_reference) {
  // A command line (no session cache, no session adapters): nothing else reads the archive's
  // own outputs.
  const bool command_line = context.models() == nullptr && context.adapterStacks() == nullptr;
  if (command_line && adapt_for == nullptr && before_reference) {
    return loadBesideReference(model_path, input_flags, before_reference);
  }
  if (adapt_for != nullptr && command_line) {
    const auto catalog = adapterCatalog(context);
    const auto meant_for = [&](const LoadedModel& model) {
      return adaptersMeantFor(catalog, model, adapt_for);
    };
    if (auto adapted = rememberedAdaptation(model_path, input_flags, meant_for, *adapt_for,
                                            before_reference)) {
      for (const std::string& name : adapted->pushed) applied->push_back(name);
      return adapted->model;
    }
  }
  std::shared_ptr<const LoadedModel> model;
  {
    ModelAdapters session(context, model_path, input_flags);
    model = session.stack().current();
  }
  if (adapt_for == nullptr) return model;
  const auto catalog = adapterCatalog(context);
  const std::vector<const CatalogEntry*> meant = adaptersMeantFor(catalog, *model, adapt_for);
  // All the stacking depends on: the model (its recipe names the archive's bytes and the
  // session's adapters), the profile's content and each adapter's text and origin.
  std::string key = recipeKeyOf(*model) + "\n" + adapt_for->content_sha256;
  for (const CatalogEntry* entry : meant) {
    key +=
        "\n" + entry->name + " " + entry->origin + " " + entry->path + " " + sourceSha256(*entry);
  }
  AdapterStacks* session = context.adapterStacks();
  if (session != nullptr) {
    if (auto kept = session->adaptation(key)) {
      for (const std::string& name : kept->applied) applied->push_back(name);
      return kept->model;
    }
  }
  AdapterStack stack(model);
  // What adapt checked minutes before on the same model, catalog and profile is not checked
  // again: the diagnosis needs the adapted model, and the checks take minutes at real sizes.
  const StackingOutcome stacking =
      stackAdapters(stack, meant, *adapt_for, StackingChecks::kCheckedOrRemembered);
  const std::vector<std::string> pushed = stacking.pushedNames(stack);
  for (const std::string& name : pushed) applied->push_back(name);
  // An adapter refused for what its code did (an error, a sandbox limit, time) may do otherwise
  // next time; refusals by an equivalence check, whose draws are seeded, would not.
  const bool repeatable =
      std::all_of(stacking.refused.begin(), stacking.refused.end(),
                  [](const StackingRefusal& refusal) { return refusal.equivalence.has_value(); });
  if (session != nullptr && repeatable) session->keepAdaptation(key, {stack.current(), pushed});
  return stack.current();
}

const char* const kChangesTheSession =
    "Changes the session: later calls on this model in this session (check_support, "
    "run_model, inspect_model, diagnose_model, localize_divergence, apply_adapter, adapt_model) "
    "see the adapted model, and every result lists the stack it was computed with "
    "(model.adapters); revert_adapter takes adapters off, with all: true every one.";

json sessionStackToJson(const AdapterStack& stack) {
  const std::vector<std::string> names = stack.names();
  json session = {
      {"adapters", names},
      {"note", names.empty() ? "the session's model is the original archive"
                             : "the session's model now has these adapters applied, in this "
                               "order; later calls on it see them (revert_adapter with all: "
                               "true returns it to the original archive)"}};
  json probes = json::array();
  for (const AdapterApplication& application : stack.applied()) {
    if (isInlineAdapter(application.adapter)) {
      probes.push_back(application.adapter.metadata.name);
    }
  }
  if (!probes.empty()) session["inline"] = std::move(probes);  // in no catalog
  return session;
}

namespace {

std::string brief(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

}  // namespace

std::string equivalenceLine(const json& equivalence) {
  const std::string verdict = equivalence.value("verdict", "");
  if (verdict == "unchanged") return "unchanged: the same computation, node for node";
  std::string scope = equivalence.value("scope", "");
  if (equivalence.contains("modules") && scope == "region") {
    const size_t calls = equivalence["modules"].size();
    scope = "region of " + std::to_string(calls) + " module call" + (calls == 1 ? "" : "s");
  }
  const int draws = equivalence.value("inputs_checked", 0);
  scope += ", " + std::to_string(draws) + " input draw" + (draws == 1 ? "" : "s");
  if (!equivalence.value("accepted", false)) {
    return verdict + " (" + scope + "): " + equivalence.value("problem", "");
  }
  const double ratio = equivalence["float64"].value("max_ratio_to_tolerance", 0.0);
  const double factor = equivalence["float32"].value("factor", 0.0);
  return "equivalent (" + scope + "): float64 difference " + brief(ratio) +
         " of its tolerance, float32 error " + brief(factor) + "x the original's; " +
         (equivalence.value("bitwise_equal", false)
              ? std::string("bitwise equal in float32")
              : std::to_string(equivalence.value("max_ulps", int64_t{0})) + " float32 ULPs apart");
}

std::string equivalenceText(const EquivalenceResult& result) {
  return equivalenceLine(equivalenceToJson(result));
}

std::optional<EquivalenceResult> checkStackEnd(const AdapterStack& stack,
                                               const AdapterApplication& application) {
  if (!application.after ||
      application.equivalence.verdict == EquivalenceResult::Verdict::kUnchanged) {
    return std::nullopt;
  }
  return checkWholeModel(*stack.original(), *application.after);
}

json applicationToJson(const AdapterApplication& application, size_t limit) {
  json result = {{"adapter", application.adapter.metadata.name},
                 {"path", application.adapter.path},
                 {"change", graphChangeToJson(application.change, limit)}};
  if (application.refused_by_condition > 0) {
    result["refused_by_condition"] = application.refused_by_condition;
    result["turned_down"] = application.turned_down;
  }
  if (!application.closest.empty()) result["closest_matches"] = application.closest;
  if (application.changed()) result["equivalence"] = equivalenceToJson(application.equivalence);
  return result;
}

json stackingToJson(const StackingOutcome& outcome, const AdapterStack& stack, size_t limit) {
  json applied = json::array();
  const auto& stacked = stack.applied();
  for (size_t i = stacked.size() - std::min(outcome.pushed, stacked.size()); i < stacked.size();
       ++i) {
    applied.push_back(outcome.checked
                          ? applicationToJson(stacked[i], limit)
                          : json{{"adapter", stacked[i].adapter.metadata.name},
                                 {"equivalence", "not checked: the archive has no weights"}});
  }
  json refused = json::array();
  for (const StackingRefusal& refusal : outcome.refused) {
    json entry = {{"adapter", refusal.adapter}, {"reason", refusal.reason}};
    if (refusal.equivalence) entry["equivalence"] = equivalenceToJson(*refusal.equivalence);
    refused.push_back(std::move(entry));
  }
  json result = {{"applied", applied}, {"refused", refused}};
  if (outcome.whole_model) result["whole_model"] = equivalenceToJson(*outcome.whole_model);
  return result;
}

json blockersLeftToJson(const LoadedModel& model, const DeviceProfile& profile, size_t limit) {
  const auto counts = countBlockers(model, profile);
  json list = json::array();
  std::map<std::string, int> by_rule;
  int total = 0;
  for (const auto& count : counts) {
    total += count.count;
    by_rule[count.rule] += count.count;
    if (limit != 0 && list.size() >= limit) continue;
    list.push_back(
        {{"rule", count.rule}, {"op", count.op}, {"module", count.module}, {"count", count.count}});
  }
  return {{"profile", profile.name}, {"total", total}, {"by_rule", by_rule}, {"blockers", list}};
}

json adapterMetadataToJson(const CatalogEntry& entry) {
  json result = {{"name", entry.name},
                 {"origin", entry.origin},
                 {"status", entry.status.empty() ? json(nullptr) : json(entry.status)},
                 {"branch", entry.branch.empty() ? json(nullptr) : json(entry.branch)},
                 {"path", entry.path}};
  if (!entry.file) {
    result["error"] = entry.error;
    return result;
  }
  const AdapterMetadata& metadata = entry.file->metadata;
  result["kind"] = entry.file->transform ? "transform" : "rewrite";
  if (entry.file->transform) {
    result["transform"] = {{"name", entry.file->transform->name},
                           {"arguments", entry.file->transform->arguments}};
  }
  result["gap"] = metadata.gap;
  result["why"] = metadata.why;
  result["models"] = metadata.models;
  result["profiles"] = metadata.profiles;
  result["clears"] = metadata.clears;
  result["remove_when"] = metadata.remove_when;
  result["max_ulps"] = metadata.max_ulps;
  return result;
}

DeviceProfile profileFromInput(const json& input, OperationContext& context) {
  return loadProfile(resolveProfile(requireString(input, "profile"), context));
}

json adapterNameField(const char* description) {
  return {{"type", "string"}, {"description", description}};
}

void refuseDecodeOfSessionAdaptedModel(OperationContext& context, const std::string& model_path,
                                       const std::string& tool) {
  if (context.models() == nullptr) return;
  // Shapes are enough to know, and cost no run.
  const std::vector<std::string> applied =
      identityOf(*context.models()->get(model_path, {}, ModelNeeds::kShapes)).adapters;
  if (applied.empty()) return;
  std::string names;
  for (const std::string& name : applied) names += (names.empty() ? "" : ", ") + name;
  throw UserError("this session applied adapters to the model (" + names + "): " + tool +
                  " with decode would read the archive's own prefill and step graphs without "
                  "them; decode it with adapt_model and decode, which applies them to those "
                  "graphs too");
}

}  // namespace stickler
