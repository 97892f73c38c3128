// apply_adapter: one catalog adapter on a model, checked for equivalence, kept in the session.
#include "adapters/engine/adapted_archive.h"
#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_file.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_json.h"
#include "tools/adapters/adapter_support.h"
#include "tools/adapters/saved_archive_report.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json inputSchema() {
  json schema = {{"type", "object"}, {"required", {"model"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["adapter"] =
      adapterNameField("The adapter's name in the catalog (or give source instead).");
  schema["properties"]["source"] = {
      {"type", "string"},
      {"maxLength", kMaxAdapterFileBytes},
      {"description",
       "Instead of adapter: a whole adapter file (docs/adapter-format.md), to try a rewrite "
       "without drafting it. Parsed, checked and applied as a catalog adapter is, for this "
       "session only: never written to the catalog, never picked up by adapt_model, gone with "
       "revert_adapter or the session. Its name (the file's `name`) must not be a catalog "
       "adapter's."}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"]["save"] = {
      {"type", "string"},
      {"description",
       "Also write the adapted model to this archive (.pt), runnable by run_model."}};
  return schema;
}

json outputSchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "schema": {"const": "stickler.adapt"},
      "version": {"type": "integer"},
      "model": {"type": "object"},
      "status": {"enum": ["applied", "refused", "not_applicable"]},
      "inline": {"type": "boolean"},
      "application": {"type": "object"},
      "idempotent": {"type": "boolean"},
      "applied": {"type": "array", "items": {"type": "string"}},
      "session": {"type": "object"},
      "blockers_left": {"type": "object"},
      "saved": {"type": "string"},
      "saved_decode": {"type": "boolean"},
      "saved_without_decode": {"type": "string"}
    },
    "required": ["schema", "version", "model", "status", "applied"]
  })");
}

// An adapter given as text: parsed and compiled as a draft is, under the name its file gives,
// which no catalog adapter may have (the session's stack would then say one name for two
// texts). Unreviewed, so it runs sandboxed like a draft.
AdapterFile inlineAdapter(const std::string& source, const std::vector<CatalogEntry>& catalog) {
  AdapterFile file = parseAdapterFile(source, "inline source");
  validateAdapter(file);
  for (const CatalogEntry& entry : catalog) {
    if (entry.name == file.metadata.name) {
      throw UserError("inline source: '" + file.metadata.name + "' is the name of a catalog " +
                      "adapter (" + entry.origin + "): give the probe a name of its own");
    }
  }
  file.path = kInlineAdapterPrefix + file.metadata.name;
  file.reviewed = false;
  return file;
}

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  if (input.contains("adapter") == input.contains("source")) {
    throw UserError(
        "give adapter (a catalog adapter's name) or source (an adapter file's text, applied for "
        "this session only), not both");
  }
  const DeviceProfile profile = profileFromInput(input, context);
  const auto catalog = adapterCatalog(context);
  const bool inline_source = input.contains("source");
  std::optional<AdapterFile> given;
  std::string origin = "inline";
  if (inline_source) {
    given = inlineAdapter(requireString(input, "source"), catalog);
  } else {
    const CatalogEntry& entry = findCatalogEntry(catalog, requireString(input, "adapter"));
    if (!entry.file) throw UserError(entry.error);
    given = *entry.file;
    origin = entry.origin;
  }
  const std::string name = given->metadata.name;
  ModelAdapters adapters(context, model_path, optionalStrings(input, "inputs"));
  AdapterStack& stack = adapters.stack();
  if (stack.contains(name))
    throw UserError("adapter '" + name + "' is already applied to " + model_path);

  AdapterApplication application = applyAdapter(*given, stack.current(), profile);
  json report = {{"schema", "stickler.adapt"},
                 {"version", 2},
                 {"model", {{"path", model_path}, {"name", cardOf(*stack.original()).name}}},
                 {"application", applicationToJson(application, context.listLimit())}};
  if (inline_source) report["inline"] = true;
  // Once at the end of the stack this adapter would make: the whole model.
  std::optional<EquivalenceResult> whole;
  std::optional<std::string> repeated;
  if (application.accepted()) {
    repeated = idempotenceProblem(application, profile);
    report["idempotent"] = !repeated.has_value();
  }
  if (application.accepted() && !repeated) {
    whole = checkStackEnd(stack, application);
    if (whole) report["whole_model_equivalence"] = equivalenceToJson(*whole);
  }
  if (!application.changed()) {
    report["status"] = "not_applicable";
    report["reason"] = unchangedReason(application);
  } else if (!application.accepted()) {
    report["status"] = "refused";
    report["reason"] = application.equivalence.problem();
  } else if (repeated) {
    report["status"] = "refused";
    report["reason"] = *repeated;
  } else if (whole && !whole->accepted()) {
    report["status"] = "refused";
    report["reason"] =
        "the whole adapted model, the original against this stack with the "
        "adapter on top, fails the equivalence check: " +
        whole->problem();
  } else {
    report["status"] = "applied";
    // An inline probe leaves no trace in the catalog: no evidence commit either.
    const std::string evidence =
        inline_source ? ""
                      : recordEvidence(
                            context, name, origin,
                            "Applied to " + cardOf(*stack.original()).name + " for " + profile.name,
                            {{"Evidence", "equivalence on the CPU: " +
                                              equivalenceText(application.equivalence)},
                             {"Model", cardOf(*stack.original()).name},
                             {"Profile", profile.name}});
    if (!evidence.empty()) report["evidence_commit"] = evidence;
    stack.push(std::move(application));
    adapters.publish();
  }
  report["applied"] = stack.names();
  report["session"] = sessionStackToJson(stack);
  report["blockers_left"] = blockersLeftToJson(*stack.current(), profile, context.listLimit());
  if (input.contains("save") && report["status"] == "applied") {
    const std::string out = context.resolveOutputPath(requireString(input, "save"));
    saveAdaptedArchive(*stack.current(), stack.names(), out);
    noteSavedArchive(report, out, cardOf(*stack.original()).decode.has_value(),
                     "its prefill and step graphs were not adapted: adapt_model with decode "
                     "(stickler adapt --decode N --save) adapts them too and keeps its decode "
                     "interface");
  }
  return report;
}

std::string renderText(const json& report) {
  std::string text = report["application"]["adapter"].get<std::string>() + " on " +
                     report["model"]["name"].get<std::string>() + ": " +
                     report["status"].get<std::string>();
  if (report.contains("reason")) text += " (" + report["reason"].get<std::string>() + ")";
  if (report.value("inline", false)) text += " [inline: this session only, not in the catalog]";
  text += "\n";
  const json& application = report["application"];
  if (application.contains("change")) {
    const json& change = application["change"];
    text += "  " + std::to_string(change["rewrites"].get<int>()) +
            " rewrite(s): " + std::to_string(change["nodes_removed"].get<int>()) +
            " node(s) removed, " + std::to_string(change["nodes_added"].get<int>()) + " added";
    if (change.value("folded", 0) > 0) {
      text += ", " + std::to_string(change["folded"].get<int>()) + " evaluated once";
      if (change.value("fixes_shapes", false)) text += " (for the model card's input shapes)";
    }
    text += "\n";
    for (const auto& reason : change.value("not_folded", json::array())) {
      text += "  not folded: " + reason.get<std::string>() + "\n";
    }
  }
  if (application.contains("equivalence")) {
    text += "  equivalence on the CPU: " + equivalenceLine(application["equivalence"]) + "\n";
  }
  if (report.contains("whole_model_equivalence")) {
    text += "  whole model: " + equivalenceLine(report["whole_model_equivalence"]) + "\n";
  }
  text += "  applied: ";
  for (const auto& name : report["applied"]) text += name.get<std::string>() + " ";
  text += "\n  blockers left on " + report["blockers_left"]["profile"].get<std::string>() + ": " +
          std::to_string(report["blockers_left"]["total"].get<int>()) + "\n";
  if (report.contains("saved")) text += "  " + savedArchiveText(report);
  return text;
}

}  // namespace

Operation makeApplyAdapterOperation() {
  Operation operation;
  operation.name = "apply_adapter";
  operation.title = "Apply an adapter";
  operation.description =
      "Apply one catalog adapter to a model in this session: the rewrite or transform runs on the "
      "model's graph, then the equivalence check runs the modules it changed, before and after, "
      "on the CPU in float64 and float32 with inputs captured from real runs: the adapter is "
      "refused when the float64 results differ beyond float64 rounding (it changes the "
      "mathematics) or the float32 results are further from the float64 original than the "
      "original's own (it is numerically worse), and when applying it again to its own output "
      "changes anything (it is not idempotent); then the whole model, original against adapted, "
      "is checked once. Bitwise equality and float32 ULPs are reported as information. Returns the "
      "graph change (nodes removed and added, by "
      "module), the equivalence result, the stack of applied adapters and the blockers left on "
      "the profile. With source instead of adapter, an adapter file's text is tried the same "
      "way for this session only (a probe: never in the catalog, never picked up by "
      "adapt_model). " +
      std::string(kChangesTheSession);
  operation.input_schema = inputSchema();
  operation.output_schema = outputSchema();
  operation.annotations = {false, false, false};
  operation.cli = {"apply", {"model", "adapter"}, {{"inputs", "input"}}};
  operation.run = run;
  operation.render_text = renderText;
  operation.exit_status = [](const json& report) {
    return report["status"] == "applied" ? ExitStatus::kOk : ExitStatus::kFailed;
  };
  return operation;
}

}  // namespace stickler
