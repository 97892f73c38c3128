// init: the workspace's adapter catalog, a git repository seeded from the shipped catalog.
#include "adapters/catalog_repo/workspace_catalog.h"
#include "adapters/engine/adapter_catalog.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string dir = workspaceCatalogDir(context);
  const CatalogInitResult result = WorkspaceCatalog::init(dir, shippedCatalogDir());
  return {{"schema", "stickler.init"},
          {"version", 1},
          {"catalog", dir},
          {"already_existed", result.already_existed},
          {"main_commit", result.main_commit},
          {"adapters_on_main", result.adapters_on_main}};
}

std::string renderText(const json& report) {
  if (report["already_existed"].get<bool>()) {
    return "adapter catalog already at " + report["catalog"].get<std::string>() + "\n";
  }
  return "adapter catalog created at " + report["catalog"].get<std::string>() + " with " +
         std::to_string(report["adapters_on_main"].get<size_t>()) + " shipped adapters\n";
}

}  // namespace

Operation makeInitWorkspaceOperation() {
  Operation operation;
  operation.name = "init_workspace";
  operation.title = "Initialize the workspace catalog";
  operation.description =
      "Create the workspace's adapter catalog, stickler-adapters/, as a git repository seeded "
      "with the shipped adapters on main. Harmless when it exists already.";
  operation.input_schema = {
      {"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  operation.output_schema = {
      {"type", "object"},
      {"properties", {{"schema", {{"const", "stickler.init"}}}, {"catalog", {{"type", "string"}}}}},
      {"required", {"schema", "catalog"}}};
  operation.annotations = {false, false, true};
  operation.cli = {"init", {}, {}};
  operation.run = run;
  operation.render_text = renderText;
  return operation;
}

}  // namespace stickler
