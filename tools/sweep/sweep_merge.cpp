// sweep merge: the shards of a sweep (run with --shard K/N, or as a Slurm array or a Kubernetes
// Indexed Job) made one sweep, recorded in history like an unsharded one (docs/sweeps.md).
#include "tools/framework/operation_table.h"
#include "tools/sweep/sweep_presentation.h"
#include "tools/sweep/sweep_run.h"

namespace stickler {

namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  std::vector<std::string> shards;
  for (const std::string& dir : input.at("shards").get<std::vector<std::string>>()) {
    shards.push_back(context.resolvePath(dir));
  }
  const std::string out = context.resolvePath(requireString(input, "out"));
  json sweep = mergeSweeps(context, shards, out, retentionFromInput(input));
  sweep["out"] = out;
  return pagedSweep(std::move(sweep), context.listLimit());
}

}  // namespace

Operation makeMergeSweepsOperation() {
  Operation operation;
  operation.name = "merge_sweeps";
  operation.title = "Merge a sweep's shards";
  operation.description =
      "Combine the output directories of a sharded sweep (every shard K/N of the same model "
      "list, profile and catalog, each once) into one sweep: written to `out` (sweep.json, "
      "junit.xml, report.html) and recorded in the workspace's sweep history.";
  json schema = {
      {"type", "object"}, {"required", {"shards", "out"}}, {"additionalProperties", false}};
  schema["properties"]["shards"] = {{"type", "array"},
                                    {"items", {{"type", "string"}}},
                                    {"minItems", 1},
                                    {"description", "The shards' output directories."}};
  schema["properties"]["out"] = {{"type", "string"},
                                 {"description", "Where the merged sweep's documents go."}};
  schema["properties"].update(retentionProperties());
  operation.input_schema = schema;
  operation.output_schema = sweepOutputSchema();
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = true};
  operation.cli = {"sweep merge", {"shards"}, {}};
  operation.run = run;
  operation.render_text = renderSweepText;
  return operation;
}

}  // namespace stickler
