// Prompts: procedures an agent can start from (the skills join them in mcp_knowledge.cpp).
#include <filesystem>

#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"
#include "server/mcp/mcp_review_resources.h"
#include "simulator/device/device_profile.h"

namespace stickler {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Model archives under the workspace roots whose path (relative to its root) starts with prefix.
std::vector<std::string> modelsUnder(const Workspace& workspace, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& root : workspace.roots()) {
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
        end;
    for (; it != end && found.size() < 100; it.increment(ec)) {
      if (ec) break;
      if (it.depth() > 4) it.disable_recursion_pending();
      if (!it->is_regular_file(ec) || it->path().extension() != ".pt") continue;
      const std::string relative = fs::relative(it->path(), root, ec).string();
      if (relative.rfind(prefix, 0) == 0) found.push_back(relative);
    }
  }
  return found;
}

}  // namespace

void addSticklerPrompts(McpCatalog& catalog, const Workspace& workspace) {
  McpPrompt bring_up;
  bring_up.definition = {
      {"name", "bring_up_model"},
      {"title", "Bring a model up on Spyre"},
      {"description",
       "The procedure for bringing a model onto the Spyre simulator: inspect it, find what "
       "blocks compilation, run it end to end, and tell format noise from device faults."},
      {"arguments", json::array({{{"name", "model"},
                                  {"description", "Path to the TorchScript archive"},
                                  {"required", true}},
                                 {{"name", "profile"},
                                  {"description", "Device profile (default spyre-2026)"},
                                  {"required", false}}})}};
  bring_up.get = [](const json& arguments) {
    if (!arguments.contains("model") || !arguments["model"].is_string()) {
      throw RpcFailure(rpc_error::kInvalidParams, "bring_up_model needs the argument 'model'");
    }
    const std::string model = arguments["model"];
    const std::string profile = arguments.value("profile", std::string(kDefaultProfile));
    const std::string text =
        "Bring the model " + model + " up on the Spyre simulator (profile " + profile +
        ").\n\n"
        "1. Call inspect_model on it (include_nodes false) to learn its structure: the module "
        "tree, "
        "the inputs from its model card, the operators.\n"
        "2. Call check_support with profile " +
        profile +
        ". Every blocker names the op, the module, "
        "the source line and the rule that fired. Group them by rule: unsupported operators, sizes "
        "that are not whole 64-value sticks (hidden, intermediate, vocabulary), RoPE heads too "
        "small, weights beyond a core's span. Read stickler://docs/device-profiles for the rules.\n"
        "3. When it compiles, call run_model with backend spyre-sim:" +
        profile +
        ". A pass is done. "
        "On a failing verdict, call run_model with backend cpu-emulated:dl16: if that fails the "
        "same "
        "way, the model is not safe in the device's number format (masks built with float32's "
        "minimum overflow, for one); if it passes, the device itself is at fault.\n"
        "4. Narrow a device fault with the modules argument of run_model: run one module at a time "
        "on the device and the rest on the CPU; the module that flips the verdict is the culprit. "
        "Confirm that the one change you made is the one that mattered before you report it.";
    return json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}});
  };
  bring_up.complete = [&workspace](const std::string& argument, const std::string& prefix) {
    if (argument == "model") return modelsUnder(workspace, prefix);
    std::vector<std::string> profiles;
    for (const auto& name : listProfiles()) {
      if (name.rfind(prefix, 0) == 0) profiles.push_back(name);
    }
    return profiles;
  };
  catalog.prompts.push_back(std::move(bring_up));
}

void addOperationTools(McpCatalog& catalog);
void addSticklerResources(McpCatalog& catalog);
void addPatternReferenceResources(McpCatalog& catalog);
void addReportResources(McpCatalog& catalog, const Workspace& workspace);
void addKnowledgeResources(McpCatalog& catalog, const Workspace& workspace);
void addSkillPrompts(McpCatalog& catalog, const Workspace& workspace);

McpCatalog sticklerCatalog(const Workspace& workspace) {
  McpCatalog catalog;
  addOperationTools(catalog);
  addSticklerResources(catalog);
  addPatternReferenceResources(catalog);
  addReportResources(catalog, workspace);
  addReviewResources(catalog, workspace);
  addKnowledgeResources(catalog, workspace);
  addSticklerPrompts(catalog, workspace);
  addSkillPrompts(catalog, workspace);
  return catalog;
}

}  // namespace stickler
