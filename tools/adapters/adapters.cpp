// list_adapters: the catalog, shipped and workspace, with each adapter's metadata.
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string profile = input.contains("profile") ? requireString(input, "profile") : "";
  json adapters = json::array();
  for (const CatalogEntry& entry : adapterCatalog(context)) {
    if (!profile.empty() && entry.file && !adapterTargetsProfile(entry.file->metadata, {profile})) {
      continue;
    }
    adapters.push_back(adapterMetadataToJson(entry));
  }
  return {{"schema", "stickler.adapters"},
          {"version", 2},
          {"shipped_catalog", shippedCatalogDir()},
          {"workspace_catalog", workspaceCatalogDir(context)},
          {"adapters", adapters}};
}

std::string renderText(const json& report) {
  std::string text;
  for (const auto& adapter : report["adapters"]) {
    text += adapter["name"].get<std::string>() + " (" + adapter["status"].get<std::string>();
    if (adapter["branch"].is_string()) text += ", " + adapter["branch"].get<std::string>();
    text += ")";
    if (adapter.contains("error")) {
      text += ": " + adapter["error"].get<std::string>() + "\n";
      continue;
    }
    text += ": " + adapter["gap"].get<std::string>() + "\n  profiles:";
    for (const auto& profile : adapter["profiles"]) text += " " + profile.get<std::string>();
    text += "\n";
  }
  return text.empty() ? "no adapters\n" : text;
}

}  // namespace

Operation makeListAdaptersOperation() {
  Operation operation;
  operation.name = "list_adapters";
  operation.title = "List adapters";
  operation.description =
      "The adapter catalog: the shipped adapters and the workspace's own (its drafts included, "
      "which shadow a shipped adapter of the same name), each with the gap it bridges, why it is "
      "right, the models and profiles it is for, the blockers it clears, when it can be removed "
      "and the float32 ULP distance it states (max_ulps: information; the equivalence check judges "
      "in float64). An adapter file that does not parse is listed with its error. status says "
      "what it is: shipped (as it ships), accepted (came into the workspace's main through a "
      "review), workspace (main's, changed otherwise) or draft (a draft branch changes it); "
      "branch is the workspace branch it was read from. Applying an adapter records evidence "
      "about it without making it a draft.";
  operation.input_schema = {
      {"type", "object"},
      {"properties",
       {{"profile",
         {{"type", "string"}, {"description", "Only the adapters this profile needs."}}}}},
      {"additionalProperties", false}};
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.adapters"}}}, {"adapters", {{"type", "array"}}}}},
      {"required", {"schema", "adapters"}}};
  operation.cli = {"adapters", {}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
