// sweep: every model of a list probed on a profile (the adapters that match, compile status
// without and with them, the end-to-end verdict, a failure category), resumable, sharded, and
// recorded in the sweeps' history (docs/sweeps.md).
#include <cstdlib>

#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/sweep/sweep_presentation.h"
#include "tools/sweep/sweep_run.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  SweepOptions options;
  options.list = context.resolvePath(requireString(input, "models"));
  options.out = context.resolvePath(requireString(input, "out"));
  options.jobs = input.at("jobs").get<size_t>();
  options.shard = input.contains("shard") ? parseShard(requireString(input, "shard"))
                                          : shardFromEnvironment(std::getenv);
  options.incremental = input.at("incremental").get<bool>();
  options.probe.profile = resolveProfile(requireString(input, "profile"), context);
  options.probe.model_seconds = input.at("model_timeout_seconds").get<double>();
  options.probe.run_seconds = input.at("timeout_seconds").get<double>();
  options.probe.localize = input.at("localize").get<bool>();
  options.probe.decode_steps = input.at("decode").get<int64_t>();
  options.retention = retentionFromInput(input);
  json sweep = runSweep(context, options);
  sweep["out"] = options.out;
  return pagedSweep(std::move(sweep), context.listLimit());
}

}  // namespace

Operation makeRunSweepOperation() {
  Operation operation;
  operation.name = "run_sweep";
  operation.title = "Sweep coverage over a model list";
  operation.description =
      "Probe every model of a list on a device profile, each in a worker process with a "
      "timeout: the catalog's accepted adapters that match, compile status without and with "
      "them, the end-to-end verdict, and a failure category (no adapter, unsupported op, layout "
      "rule, too large, runtime abort in a module, divergence, timeout, crash, bad archive). "
      "Results go to `out` as each model finishes: run again with the same `out` to resume. "
      "A whole sweep is recorded in the workspace's sweep history (coverage_report reads it). "
      "Long: about a second per small model; prefer coverage_report to read past sweeps.";
  json schema = {
      {"type", "object"}, {"required", {"models", "out"}}, {"additionalProperties", false}};
  json& properties = schema["properties"];
  properties["models"] = {{"type", "string"},
                          {"description",
                           "The model list: a file of archive paths and globs, one per line "
                           "('#' comments), or a zoo manifest (index.json)."}};
  properties["profile"] = profileField();
  properties["out"] = {{"type", "string"},
                       {"description",
                        "Output directory: results.jsonl as models finish, then sweep.json, "
                        "junit.xml and report.html. The same directory resumes a sweep."}};
  properties["jobs"] = {{"type", "integer"},
                        {"minimum", 1},
                        {"maximum", 64},
                        {"default", 2},
                        {"description", "Models probed at once, each in its own worker."}};
  properties["shard"] = {{"type", "string"},
                         {"pattern", "^[0-9]+/[0-9]+$"},
                         {"description",
                          "K/N: probe shard K (from 0) of N. Without it, read from a Slurm array "
                          "(SLURM_ARRAY_TASK_ID/COUNT) or a Kubernetes Indexed Job "
                          "(JOB_COMPLETION_INDEX with STICKLER_SHARD_COUNT)."}};
  properties["incremental"] = {{"type", "boolean"},
                               {"default", false},
                               {"description",
                                "Reuse a model's result from history when its archive, the "
                                "catalog, the profile and the options are unchanged."}};
  properties["localize"] = {{"type", "boolean"},
                            {"default", false},
                            {"description",
                             "Name the module of each divergence by causal localization (about "
                             "log2(modules) more device runs per diverging model)."}};
  properties["decode"] = judgeDecodeField();
  properties["model_timeout_seconds"] = modelTimeoutField();
  properties["timeout_seconds"] = timeoutField();
  properties.update(retentionProperties());
  operation.input_schema = schema;
  operation.output_schema = sweepOutputSchema();
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = true};
  operation.cli = {"sweep",
                   {},
                   {{"models", "models"},
                    {"model_timeout_seconds", "model-timeout"},
                    {"timeout_seconds", "timeout"}}};
  operation.run = run;
  operation.render_text = renderSweepText;
  return operation;
}

}  // namespace stickler
