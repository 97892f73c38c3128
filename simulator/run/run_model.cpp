#include "simulator/run/run_model.h"

#include "simulator/backends/backend.h"
#include "simulator/compare/output_comparison.h"
#include "simulator/graph/node_info.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/run/run_decode.h"
#include "simulator/run/run_parts.h"
#include "simulator/support/errors.h"

namespace stickler {

DeviceRunReport describeRun(const BackendRun& run, const LoadedModel& model) {
  DeviceRunReport report;
  report.status = runStatusName(run.status);
  report.seconds = run.seconds;
  if (run.status == BackendRun::Status::kCompleted) return report;
  report.message = run.message;
  report.device_log = run.device_log;
  report.signal = run.signal;
  report.nodes_run = run.nodes_run;
  if (run.module) {
    report.module = run.module->path;
    report.module_class = run.module->class_name;
  }
  if (run.last_entered) report.last_module_entered = run.last_entered->path;
  if (run.node) {
    const NodeOrigin origin = originOf(*run.node, model.modules);
    report.op = run.node->kind().toQualString();
    if (!run.module) report.module = displayPath(origin.module_path);
    report.source = origin.python ? origin.python : origin.code;
  }
  return report;
}

RunResult runResultFor(const LoadedModel& model, const RunRequest& request,
                       const Backend& backend) {
  RunResult result;
  result.model = model.identity();
  result.backend = request.backend.text;
  result.format = backend.format();
  if (const DeviceProfile* profile = backend.profile()) result.profile = *profile;
  result.placement =
      makePlacement(model.modules, request.device_modules, request.model, model.host_modules);
  result.host_nodes = countPlacedOnHost(*model.graph);
  return result;
}

RunComparison compareWithReference(const std::vector<at::Tensor>& reference,
                                   const std::vector<at::Tensor>& device, const ModelCard& card,
                                   NumberFormat format) {
  const VerdictSettings settings;
  RunComparison comparison;
  comparison.embedding_cosine = settings.embedding_cosine;
  comparison.logit_tolerance = logitTolerance(format, settings);
  comparison.outputs = compareOutputs(reference, device, card, format, settings);
  return comparison;
}

RunResult runModel(const RunRequest& request, const TaskControl& control, ModelCache* cache) {
  if (request.decode_steps > 0) return runDecode(request, control);
  const BackendSpec& spec = request.backend;
  const auto backend = makeBackend(spec);
  if (!(request.timeout_seconds > 0)) throw UserError("timeout_seconds must be positive");
  control.progress(0, 4, "loading " + request.model);
  const auto model =
      request.loaded ? request.loaded : obtainModel(request.model, request.inputs, cache);
  control.checkCancelled();

  RunResult result = runResultFor(*model, request, *backend);

  control.progress(1, 4, "compiling for " + spec.text);
  const auto compiled = backend->compile(*model, result.placement);
  control.checkCancelled();
  if (result.profile) {
    result.compile = describeLowering(compiled->lowering(), *model, *result.profile);
  }
  if (!compiled->ok()) {
    result.verdict = RunVerdict::kBlocked;
    return result;
  }

  requireWeights(*model, "run (a run's outputs are compared with the CPU reference's values)");
  RunOptions run_options;
  run_options.timeout_seconds = request.timeout_seconds;
  run_options.cancelled = control.cancelled;
  control.progress(2, 4, "running on " + spec.text);
  const BackendRun run = compiled->run(model->example_inputs, run_options);
  if (run.status == BackendRun::Status::kCancelled) throw Cancelled();
  control.progress(3, 4, "comparing with the CPU reference");
  result.run = describeRun(run, *model);
  if (run.status != BackendRun::Status::kCompleted) {
    result.verdict = incompleteRunVerdict(run.status);
    return result;
  }

  // The reference: the CPU run made when the model was loaded, on the same inputs.
  RunComparison comparison =
      compareWithReference(flattenTensors(model->example_outputs), flattenTensors(run.outputs),
                           model->card, backend->format());
  result.verdict = comparison.outputs.passed ? RunVerdict::kPass : RunVerdict::kFail;
  result.comparison = std::move(comparison);
  return result;
}

}  // namespace stickler
