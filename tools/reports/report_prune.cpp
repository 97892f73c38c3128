// report prune: the retention policy applied on demand (sweeps apply it after each run).
#include "tools/framework/operation_table.h"
#include "tools/reports/report_retention.h"
#include "tools/sweep/sweep_presentation.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  return pruneWorkspace(context.workspaceRoot(), retentionFromInput(input),
                        input.at("dry_run").get<bool>());
}

std::string render(const json& pruned) {
  const bool dry = pruned.value("dry_run", false);
  return std::string(dry ? "would delete " : "deleted ") +
         std::to_string(pruned["reports"].size()) + " report(s) and " +
         std::to_string(pruned["repros"].size()) + " repro bundle(s) older than " +
         pruned["keep_days"].dump() + " days (" +
         std::to_string(pruned["bytes"].get<uint64_t>() >> 10) + " KiB), and " +
         std::to_string(pruned["sweeps"].size()) + " sweep(s) beyond the newest " +
         pruned["keep_sweeps"].dump() + "\n";
}

}  // namespace

Operation makePruneReportsOperation() {
  Operation operation;
  operation.name = "prune_reports";
  operation.title = "Delete old reports, repro bundles and sweeps";
  operation.description =
      "Apply the workspace's retention policy: delete saved reports and repro bundles older "
      "than keep_days, and sweeps beyond the newest keep_sweeps from history. Sweeps apply it "
      "after every run. dry_run lists what would go.";
  json schema = {{"type", "object"}, {"additionalProperties", false}};
  schema["properties"] = retentionProperties();
  schema["properties"]["dry_run"] = {
      {"type", "boolean"},
      {"default", false},
      {"description", "List what would be deleted; delete nothing."}};
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties", {{"reports", {{"type", "array"}}}}},
                             {"required", {"reports", "repros", "sweeps"}}};
  operation.annotations = {.read_only = false, .destructive = true, .idempotent = true};
  operation.cli = {"report prune", {}, {}};
  operation.run = run;
  operation.render_text = render;
  return operation;
}

}  // namespace stickler
