// draft_adapter: writes or updates an adapter in the workspace catalog, validated first, as a
// commit on its draft branch with the reason.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_catalog.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"
#include "tools/adapters/draft_matches.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

Trailers evidenceTrailers(const json& input) {
  Trailers trailers;
  for (const auto& evidence : optionalStrings(input, "evidence")) {
    trailers.emplace_back("Evidence", evidence);
  }
  if (input.contains("model")) trailers.emplace_back("Model", requireString(input, "model"));
  if (input.contains("profile")) trailers.emplace_back("Profile", requireString(input, "profile"));
  return trailers;
}

// The workspace catalog, seeded from the shipped one the first time it is needed.
WorkspaceCatalog openOrInitCatalog(OperationContext& context) {
  const std::string dir = workspaceCatalogDir(context);
  if (!std::filesystem::exists(std::filesystem::path(dir) / ".git")) {
    WorkspaceCatalog::init(dir, shippedCatalogDir());
  }
  return WorkspaceCatalog::open(dir);
}

json draftReport(const std::string& name, const WorkspaceCatalog& catalog,
                 const CatalogChange& change) {
  static const char* kChanges[] = {"created", "updated", "deleted", "unchanged"};
  return {{"schema", "stickler.draft"},
          {"version", 1},
          {"name", name},
          {"catalog", catalog.dir().string()},
          {"branch", change.branch},
          {"committed", change.committed},
          {"commit", change.commit_id},
          {"change", kChanges[static_cast<int>(change.change)]}};
}

// The profile a draft is tried for: the one given, else the first the adapter lists.
std::string draftProfileName(const json& input, const AdapterFile& file) {
  std::string name = input.value("profile", "");
  if (name.empty() && !file.metadata.profiles.empty()) name = file.metadata.profiles.front();
  return name;
}

// With a model archive to try it on: the draft applied to the model (the session's, with what
// the session applied), then again to its own output, which must change nothing. A draft that
// is not idempotent is refused with what its second application changed. `match` gets what the
// first application found, as draftMatches() says it.
json idempotenceOn(const json& input, const AdapterFile& file, OperationContext& context,
                   std::string& resolved, json& match) {
  if (!input.contains("model")) {
    return {{"checked", false}, {"why", "no model given to try it on"}};
  }
  const std::string given = requireString(input, "model");
  std::string path;
  try {
    path = context.resolvePath(given);
  } catch (const UserError&) {
    return {{"checked", false}, {"why", given + " is not a model archive in the workspace"}};
  }
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return {{"checked", false}, {"why", given + " is not a model archive in the workspace"}};
  }
  resolved = path;
  const DeviceProfile profile = loadProfile(resolveProfile(draftProfileName(input, file), context));
  ModelAdapters adapters(context, path, {});
  const AdapterApplication first =
      applyAdapter(file, adapters.stack().current(), profile, /*check_equivalence=*/false);
  if (!first.changed()) {
    const std::string why = unchangedReason(first);
    match = {{"model", given}, {"matched", false}, {"why", why}};
    return {{"checked", false}, {"why", "it changes nothing in " + given + ": " + why}};
  }
  match = matchedEntry(given, first);
  if (auto problem = idempotenceProblem(first, profile)) {
    throw UserError(file.path + ": " + *problem + "; nothing was written");
  }
  return {{"checked", true}, {"model", given}, {"profile", profile.name}};
}

// Where the draft matches: the model it was written for, then the workspace's archives its
// `models` names; a warning for each it matches nothing in.
json matchesOf(const json& input, const AdapterFile& file, OperationContext& context,
               const std::string& resolved, json given_match) {
  json tried = json::array();
  if (!given_match.is_null()) tried.push_back(std::move(given_match));
  json matches = {{"not_tried", 0}, {"too_large", json::array()}};
  json warnings = json::array();
  const std::string profile_name = draftProfileName(input, file);
  if (!profile_name.empty()) {
    // A profile it names that does not load (one of a later stack, say) keeps the draft from
    // being tried, not from being written.
    std::optional<DeviceProfile> profile;
    try {
      profile = loadProfile(resolveProfile(profile_name, context));
    } catch (const UserError& e) {
      warnings.push_back("not tried on the workspace's models: " + std::string(e.what()));
    }
    if (profile) {
      json found = draftMatches(file, *profile, resolved, context);
      for (json& entry : found["tried"]) tried.push_back(std::move(entry));
      matches["not_tried"] = found["not_tried"];
      matches["too_large"] = found["too_large"];
    }
  }
  matches["tried"] = tried;
  for (json& warning : draftWarnings(tried)) warnings.push_back(std::move(warning));
  return {{"matches", matches}, {"warnings", warnings}};
}

json run(const json& input, OperationContext& context) {
  const std::string name = requireString(input, "name");
  const std::string reason = requireString(input, "reason");
  const bool revert = optionalBool(input, "revert", false);
  const bool remove = optionalBool(input, "delete", false);
  const bool rename = input.contains("rename_to");
  if (static_cast<int>(revert) + static_cast<int>(remove) + static_cast<int>(rename) +
          static_cast<int>(input.contains("source")) !=
      1) {
    throw UserError(
        "give one of 'source' (a new version), 'revert': true (undo the last one), 'delete': "
        "true (take the draft away) or 'rename_to' (a new name for the draft)");
  }
  WorkspaceCatalog::validateName(name);
  CatalogChange change;
  if (revert) {
    WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
    change = catalog.revert(name, "", reason, evidenceTrailers(input));
    return draftReport(name, catalog, change);
  }
  if (remove) {
    WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
    change = catalog.deleteDraft(name, reason);
    return draftReport(name, catalog, change);
  }
  if (rename) {
    const std::string to = requireString(input, "rename_to");
    WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
    // Only the name field changes: the draft's text was checked when it was drafted.
    change = catalog.renameDraft(name, to, reason);
    json report = draftReport(to, catalog, change);
    report["renamed_from"] = name;
    return report;
  }
  const std::string source = requireString(input, "source");
  // Parsed and compiled as the engine will, so a draft in the catalog always loads.
  const AdapterFile file = parseAdapterFile(source, name + ".py");
  validateAdapter(file);
  std::string resolved;
  json given_match;
  const json idempotence = idempotenceOn(input, file, context, resolved, given_match);
  const json matches = matchesOf(input, file, context, resolved, std::move(given_match));
  WorkspaceCatalog catalog = openOrInitCatalog(context);
  change = catalog.draft(name, source, reason, evidenceTrailers(input));
  json report = draftReport(name, catalog, change);
  report["idempotence"] = idempotence;
  report["matches"] = matches["matches"];
  report["warnings"] = matches["warnings"];
  const json& tried = report["matches"]["tried"];
  std::string summary = name + ": " + report["change"].get<std::string>() + " on " + change.branch;
  const auto matched = std::count_if(
      tried.begin(), tried.end(), [](const json& entry) { return entry.value("matched", false); });
  if (!tried.empty()) {
    summary += "; matches " + std::to_string(matched) + " of the " + std::to_string(tried.size()) +
               " model(s) tried";
  }
  for (const json& warning : report["warnings"]) {
    summary += ". Warning: " + warning.get<std::string>();
  }
  report["summary"] = summary;
  return report;
}

std::string renderText(const json& report) {
  std::string text;
  if (!report["committed"].get<bool>()) {
    text = report["name"].get<std::string>() + ": unchanged on " +
           report["branch"].get<std::string>() + "\n";
  } else {
    text = report["name"].get<std::string>() + ": " + report["change"].get<std::string>() + " on " +
           report["branch"].get<std::string>() + " (" +
           report["commit"].get<std::string>().substr(0, 12) + ")\n";
  }
  if (report.contains("matches")) {
    for (const json& entry : report["matches"]["tried"]) {
      text += "  " + std::string(entry.value("matched", false) ? "matches " : "no match ") +
              entry.value("model", "") +
              (entry.contains("rewrites")
                   ? " (" + std::to_string(entry["rewrites"].get<int64_t>()) + " rewrites)"
                   : "") +
              "\n";
    }
    if (report["matches"].value("not_tried", 0) > 0) {
      text += "  (" + std::to_string(report["matches"]["not_tried"].get<int64_t>()) +
              " more models its `models` names were not tried)\n";
    }
    for (const json& model : report["matches"].value("too_large", json::array())) {
      text += "  not tried: " + model.get<std::string>() +
              " (too large to load while drafting; match_adapters tries it)\n";
    }
  }
  for (const json& warning : report.value("warnings", json::array())) {
    text += "warning: " + warning.get<std::string>() + "\n";
  }
  return text;
}

}  // namespace

Operation makeDraftAdapterOperation() {
  Operation operation;
  operation.name = "draft_adapter";
  operation.title = "Draft an adapter";
  operation.description =
      "Write or update an adapter in the workspace's catalog (a git repository, "
      "stickler-adapters/, created from the shipped catalog on first use). The source is "
      "checked first: a syntax error or bad field comes back with its line and column, a "
      "TorchScript error in pattern or replacement likewise, and nothing is written. A valid "
      "source is committed on the branch draft/<name> with the reason as the message and "
      "evidence as commit trailers; drafting the same text again commits nothing. The draft is "
      "then what list_adapters, match_adapters and apply_adapter use. Given a model archive, the "
      "draft is applied to it and again to its own output: a draft whose second application "
      "changes anything (not idempotent) is refused with that change. The draft is also tried on "
      "the workspace's model archives its `models` names (at most 8): `matches` lists each with "
      "whether it matched, and `warnings` says plainly where it matches nothing and why "
      "(\"matches nothing in <model>: <reason>\"); the draft is committed all the same. "
      "With revert instead of a "
      "source, the draft's last change is undone by a revert commit; with delete the draft is "
      "taken away; with rename_to it moves to a new name. catalog_history gives a draft's "
      "commits and evidence without git. See "
      "docs/adapter-format.md and docs/adapter-catalog.md.";
  operation.input_schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "description": "The adapter's name (kebab-case); the file is <name>.py."},
      "source": {"type": "string", "description": "The whole adapter file (docs/adapter-format.md)."},
      "revert": {"type": "boolean", "description": "Instead of a source: undo the draft's last change, as a revert commit."},
      "delete": {"type": "boolean", "description": "Instead of a source: take the draft away (its branch is kept as deleted/<name>/<n>); the adapter is main's again, or gone."},
      "rename_to": {"type": "string", "description": "Instead of a source: draft the draft's text under this name (its name field rewritten) and delete the old draft."},
      "reason": {"type": "string", "description": "Why this draft: the commit message's subject."},
      "evidence": {"type": "array", "items": {"type": "string"}, "description": "Evidence lines for the commit (e.g. 'equivalent on gpt2-tiny')."},
      "model": {"type": "string", "description": "The model the draft was written for (a trailer). When it is an archive in the workspace, the draft is applied to it and then to its own output, which must change nothing (idempotence), before anything is written."},
      "profile": {"type": "string", "description": "The profile it was written for (a trailer; the profile of the idempotence check, else the first the adapter lists)."}
    },
    "required": ["name", "reason"],
    "additionalProperties": false
  })");
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"schema", {{"const", "stickler.draft"}}},
                               {"committed", {{"type", "boolean"}}},
                               {"commit", {{"type", "string"}}},
                               {"summary", {{"type", "string"}}},
                               {"matches", {{"type", "object"}}},
                               {"warnings", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
                             {"required", {"schema", "committed", "commit"}}};
  operation.annotations = {false, false, false};
  operation.cli = {"draft", {"name"}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
