#include "simulator/run/run_model.h"

#include "simulator/backends/backend.h"
#include "simulator/compare/output_comparison.h"
#include "simulator/graph/node_info.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/support/errors.h"

namespace stickler {

using nlohmann::json;

namespace {

json backendToJson(const Backend& backend) {
  const BackendSpec& spec = backend.spec();
  json entry{{"spec", spec.text}, {"format", formatName(backend.format())}};
  if (const DeviceProfile* profile = backend.profile()) entry["profile"] = profileSummary(*profile);
  return entry;
}

json runToJson(const BackendRun& run, const LoadedModel& model) {
  json entry{{"status", runStatusName(run.status)}, {"seconds", run.seconds}};
  if (run.status == BackendRun::Status::kCompleted) return entry;
  entry["message"] = run.message;
  if (!run.device_log.empty()) entry["device_log"] = run.device_log;
  if (run.signal != 0) entry["signal"] = run.signal;
  entry["nodes_run"] = run.nodes_run;
  if (run.module) {
    entry["module"] = run.module->path;
    entry["module_class"] = run.module->class_name;
  }
  if (run.last_entered) entry["last_module_entered"] = run.last_entered->path;
  if (run.node) {
    const NodeOrigin origin = originOf(*run.node, model.modules);
    entry["op"] = run.node->kind().toQualString();
    if (!run.module) entry["module"] = displayPath(origin.module_path);
    const auto& where = origin.python ? origin.python : origin.code;
    if (where) entry["source"] = {{"file", where->file}, {"line", where->line}};
  }
  return entry;
}

}  // namespace

json runModel(const RunRequest& request, const TaskControl& control, ModelCache* cache) {
  const BackendSpec spec = parseBackendSpec(request.backend);
  const auto backend = makeBackend(spec);
  if (!(request.timeout_seconds > 0)) throw UserError("timeout_seconds must be positive");
  control.progress(0, 4, "loading " + request.model);
  const auto model =
      request.loaded ? request.loaded : obtainModel(request.model, request.inputs, cache);
  control.checkCancelled();
  const Placement placement =
      makePlacement(model->modules, request.device_modules, request.model, model->host_modules);

  json report{
      {"schema", "stickler.run"},
      {"version", 1},
      {"model", {{"path", model->path}, {"sha256", model->sha256}, {"name", model->card.name}}},
      {"backend", backendToJson(*backend)},
      {"placement", placement.wholeModel() ? json("whole model") : json(placement.device_modules)}};
  if (!placement.host_modules.empty()) report["host_modules"] = placement.host_modules;
  if (const int64_t nodes = countPlacedOnHost(*model->graph)) report["host_nodes"] = nodes;

  control.progress(1, 4, "compiling for " + spec.text);
  const auto compiled = backend->compile(*model, placement);
  control.checkCancelled();
  if (const DeviceProfile* profile = backend->profile()) {
    report["compile"] = loweringToJson(compiled->lowering(), *model, *profile);
  } else {
    report["compile"] = {{"status", "ok"}};
  }
  if (!compiled->ok()) {
    report["verdict"] = runVerdictName(RunVerdict::kBlocked);
    report["exit_status"] = kRunBlocked;
    return report;
  }

  RunOptions run_options;
  run_options.timeout_seconds = request.timeout_seconds;
  run_options.cancelled = control.cancelled;
  control.progress(2, 4, "running on " + spec.text);
  const BackendRun run = compiled->run(model->example_inputs, run_options);
  if (run.status == BackendRun::Status::kCancelled) throw Cancelled();
  control.progress(3, 4, "comparing with the CPU reference");
  report["run"] = runToJson(run, *model);
  if (run.status != BackendRun::Status::kCompleted) {
    report["verdict"] = runVerdictName(incompleteRunVerdict(run.status));
    report["exit_status"] = kRunAborted;
    return report;
  }

  // The reference: the CPU run made when the model was loaded, on the same inputs.
  const VerdictSettings settings;
  bool passed = false;
  report["comparison"] = {{"reference", "cpu"},
                          {"settings",
                           {{"embedding_cosine", settings.embedding_cosine},
                            {"logit_tolerance", logitTolerance(backend->format(), settings)}}},
                          {"outputs", compareOutputs(flattenTensors(model->example_outputs),
                                                     flattenTensors(run.outputs), model->card,
                                                     backend->format(), settings, &passed)}};
  report["verdict"] = runVerdictName(passed ? RunVerdict::kPass : RunVerdict::kFail);
  report["exit_status"] = passed ? kRunPass : kRunFail;
  return report;
}

}  // namespace stickler
