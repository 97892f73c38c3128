#include "simulator/run/run_decode.h"

#include <cmath>
#include <functional>

#include "simulator/backends/backend.h"
#include "simulator/compare/output_comparison.h"
#include "simulator/graph/decode_card.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/run/decode_cosines.h"
#include "simulator/run/run_parts.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

std::shared_ptr<const LoadedModel> loadGraph(const std::string& path, ModelGraph graph) {
  LoadOptions options;
  options.graph = graph;
  return loadModel(path, options);
}

at::Tensor outputOf(const std::vector<at::Tensor>& outputs, const std::vector<OutputSpec>& specs,
                    OutputKind kind) {
  const auto index = outputOfKind(specs, kind);
  if (!index || *index >= outputs.size()) {
    throw UserError("the decode graph returned " + std::to_string(outputs.size()) +
                    " outputs; its card names one of kind " + outputKindName(kind) +
                    " beyond them");
  }
  return outputs[*index];
}

// `outputs` with each logits output ([batch, prompt, vocabulary]) taken at the `kept` positions.
std::vector<at::Tensor> atPromptTokens(std::vector<at::Tensor> outputs,
                                       const std::vector<OutputSpec>& specs, int64_t prompt_length,
                                       const at::Tensor& kept) {
  for (size_t i = 0; i < outputs.size() && i < specs.size(); ++i) {
    at::Tensor& output = outputs[i];
    if (specs[i].kind == OutputKind::kLogits && output.dim() == 3 &&
        output.size(1) == prompt_length) {
      output = output.index_select(1, kept);
    }
  }
  return outputs;
}

std::optional<double> cosine(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kDouble).flatten();
  const at::Tensor y = b.to(at::kDouble).flatten();
  const double norms = x.norm().item<double>() * y.norm().item<double>();
  const double value = norms > 0 ? x.dot(y).item<double>() / norms : (at::equal(x, y) ? 1.0 : 0.0);
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

// Per layer of [layers, batch, kv_heads, max_length, head_dim] caches, over the kept slots.
std::vector<std::optional<double>> layerCosines(const at::Tensor& reference,
                                                const at::Tensor& device,
                                                const at::Tensor& kept_slots) {
  std::vector<std::optional<double>> cosines;
  if (reference.sizes() != device.sizes() || reference.dim() != 5) return cosines;
  for (int64_t layer = 0; layer < reference.size(0); ++layer) {
    cosines.push_back(cosine(reference[layer].index_select(2, kept_slots),
                             device[layer].index_select(2, kept_slots)));
  }
  return cosines;
}

// Compares one step's last-position logits ([batch, 1, vocab]) as a run's logits are compared.
DecodeStepReport judgeStep(const at::Tensor& reference_logits, const at::Tensor& device_logits,
                           NumberFormat format) {
  DecodeStepReport step;
  const at::Tensor reference = reference_logits.select(1, -1).unsqueeze(1);
  const at::Tensor device = device_logits.select(1, -1).unsqueeze(1);
  ModelCard card;
  card.outputs = {{"logits", OutputKind::kLogits}};
  const OutputComparison comparison =
      compareWithReference({reference}, {device}, card, format).outputs;
  step.logits = comparison.outputs.at(0);
  step.passed = comparison.passed;
  step.reference_token = reference.flatten().argmax().item<int64_t>();
  step.device_token = device.flatten().argmax().item<int64_t>();
  return step;
}

struct Cache {
  at::Tensor keys;
  at::Tensor values;
};

// The step's inputs in its card's order, by role; what has no role keeps its example value.
std::vector<c10::IValue> stepInputs(const LoadedModel& step_model, int64_t token,
                                    const at::Tensor& mask, int64_t slot, const Cache& cache) {
  std::vector<c10::IValue> inputs = step_model.example_inputs;
  const auto& specs = step_model.card.inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    const at::Tensor example = inputs[i].toTensor();
    switch (specs[i].kind) {
      case InputKind::kTokenIds:
        inputs[i] = at::full_like(example, token);
        break;
      case InputKind::kMask:
        // A copy: the caller goes on marking slots in `mask`.
        inputs[i] = mask.to(example.scalar_type()).expand(example.sizes()).clone();
        break;
      case InputKind::kCachePosition:
        inputs[i] = at::full_like(example, slot);
        break;
      case InputKind::kPastKeys:
        inputs[i] = cache.keys;
        break;
      case InputKind::kPastValues:
        inputs[i] = cache.values;
        break;
      default:
        break;
    }
  }
  return inputs;
}

}  // namespace

RunResult runDecode(const RunRequest& request, const TaskControl& control,
                    StepToLocalize* to_localize) {
  // Keeps the wanted step, else the first that does not pass (step 0 is the prefill); `stops`:
  // the decode goes no further, so this step is the one whatever was wanted.
  auto focus = [&](int64_t step, bool failing, bool stops,
                   const std::function<std::shared_ptr<const LoadedModel>()>& model) {
    if (to_localize == nullptr || to_localize->model) return;
    if (!stops && (to_localize->wanted ? *to_localize->wanted != step : !failing)) return;
    to_localize->model = model();
    to_localize->step = step;
    to_localize->failing = failing;
    to_localize->graph = to_localize->model->graph_kind;
  };
  const BackendSpec& spec = request.backend;
  const auto backend = makeBackend(spec);
  if (!(request.timeout_seconds > 0)) throw UserError("timeout_seconds must be positive");
  if (request.loaded) {
    throw std::logic_error("a decode runs its prefill and step graphs, not a forward in hand");
  }
  if (!request.inputs.empty()) {
    throw UserError("--decode runs the card's decode interface; --input does not apply to it");
  }
  control.progress(0, 4, "loading " + request.model);
  const auto prefill = request.decode_prefill ? request.decode_prefill
                                              : loadGraph(request.model, ModelGraph::kPrefill);
  const auto step =
      request.decode_step ? request.decode_step : loadGraph(request.model, ModelGraph::kDecodeStep);
  const DecodeSpec& decode_spec = *prefill->card.decode;
  control.checkCancelled();

  RunResult result = runResultFor(*prefill, request, *backend);

  DecodeReport& report = result.decode.emplace();
  report.steps = request.decode_steps;
  report.max_length = decode_spec.max_length;
  report.prefill_method = decode_spec.prefill.method;
  report.step_method = decode_spec.step.method;
  const at::Tensor prompt_mask =
      prefill->example_inputs.at(*inputOfKind(prefill->card.inputs, InputKind::kMask)).toTensor();
  report.prompt_length = prompt_mask.size(-1);
  report.prompt_tokens =
      prompt_mask.reshape({-1, report.prompt_length})[0].ne(0).sum().item<int64_t>();
  if (to_localize != nullptr && to_localize->wanted &&
      (*to_localize->wanted < 0 || *to_localize->wanted > request.decode_steps)) {
    throw UserError("decode step " + std::to_string(*to_localize->wanted) + ": a decode of " +
                    std::to_string(request.decode_steps) + " steps has steps 0 (the prefill) to " +
                    std::to_string(request.decode_steps));
  }
  const int64_t free_slots = report.max_length - report.prompt_length;
  if (request.decode_steps > free_slots) {
    throw UserError("--decode " + std::to_string(request.decode_steps) + ": the cache has " +
                    std::to_string(report.max_length) + " slots and the prompt fills " +
                    std::to_string(report.prompt_length) + ", leaving " +
                    std::to_string(free_slots) + " steps");
  }

  control.progress(1, 4, "compiling the prefill and the step for " + spec.text);
  const auto prefill_compiled = backend->compile(*prefill, result.placement);
  const Placement step_placement =
      makePlacement(step->modules, request.device_modules, request.model, step->host_modules);
  const auto step_compiled = backend->compile(*step, step_placement);
  control.checkCancelled();
  // The report shows the lowering of the graph that is blocked, else the prefill's.
  const bool show_step = prefill_compiled->ok() && !step_compiled->ok();
  if (result.profile) {
    result.compile = describeLowering((show_step ? *step_compiled : *prefill_compiled).lowering(),
                                      show_step ? *step : *prefill, *result.profile);
  }
  if (!prefill_compiled->ok() || !step_compiled->ok()) {
    report.blocked_graph =
        modelGraphName(show_step ? ModelGraph::kDecodeStep : ModelGraph::kPrefill);
    // A blocked step graph blocks the first decoded step.
    focus(show_step ? 1 : 0, true, true, [&] { return show_step ? step : prefill; });
    result.verdict = RunVerdict::kBlocked;
    return result;
  }

  requireWeights(*prefill, "decoded (its steps are compared with the CPU reference's values)");
  RunOptions options;
  options.timeout_seconds = request.timeout_seconds;
  options.cancelled = control.cancelled;
  control.progress(2, 4, "prefill on " + spec.text);
  const BackendRun prefill_run = prefill_compiled->run(prefill->example_inputs, options);
  if (prefill_run.status == BackendRun::Status::kCancelled) throw Cancelled();
  result.run = describeRun(prefill_run, *prefill);
  if (prefill_run.status != BackendRun::Status::kCompleted) {
    focus(0, true, true, [&] { return prefill; });
    result.verdict = incompleteRunVerdict(prefill_run.status);
    return result;
  }

  const std::vector<at::Tensor> reference_out = flattenTensors(prefill->example_outputs);
  const std::vector<at::Tensor> device_out = flattenTensors(prefill_run.outputs);
  // The logits of the left padding are never read (a token is sampled from the last position,
  // and the padding's rows attend to anything): the prefill is judged at the prompt's tokens, as
  // the caches are at their kept slots. A padding row's router may pick another expert on a
  // near tie, which changes nothing the model serves.
  const at::Tensor prompt_kept =
      prompt_mask.reshape({-1, report.prompt_length})[0].nonzero().flatten();
  RunComparison comparison = compareWithReference(
      atPromptTokens(reference_out, prefill->card.outputs, report.prompt_length, prompt_kept),
      atPromptTokens(device_out, prefill->card.outputs, report.prompt_length, prompt_kept),
      prefill->card, backend->format());
  const bool prefill_passed = comparison.outputs.passed;
  result.comparison = std::move(comparison);

  const auto& outputs = prefill->card.outputs;
  const auto& step_outputs = step->card.outputs;
  Cache reference{outputOf(reference_out, outputs, OutputKind::kPastKeys),
                  outputOf(reference_out, outputs, OutputKind::kPastValues)};
  Cache device{outputOf(device_out, outputs, OutputKind::kPastKeys),
               outputOf(device_out, outputs, OutputKind::kPastValues)};
  // The mask over the cache's slots: the prompt's, then each decoded token's slot.
  at::Tensor mask = at::zeros({report.max_length}, at::kLong);
  mask.narrow(0, 0, report.prompt_length).copy_(prompt_mask.reshape({-1, report.prompt_length})[0]);

  // `fed`: the model of the step with the inputs the reference fed it.
  auto note = [&](DecodeStepReport step_report, int64_t slot, double seconds,
                  const std::function<std::shared_ptr<const LoadedModel>()>& fed) {
    const at::Tensor kept = mask.nonzero().flatten();
    step_report.step = static_cast<int64_t>(report.per_step.size());
    step_report.slot = slot;
    step_report.seconds = seconds;
    step_report.key_cosine = layerCosines(reference.keys, device.keys, kept);
    step_report.value_cosine = layerCosines(reference.values, device.values, kept);
    if (const auto low = lowestKvCosine(step_report)) {
      report.min_kv_cosine = report.min_kv_cosine ? std::min(*report.min_kv_cosine, *low) : *low;
    }
    if (!step_report.passed && !report.first_failing_step) {
      report.first_failing_step = step_report.step;
    }
    focus(step_report.step, !step_report.passed, false, fed);
    report.per_step.push_back(std::move(step_report));
    return report.per_step.back().reference_token;
  };
  // Step 0 is the prefill: its last position's logits, and every output of the prefill.
  DecodeStepReport prefill_step =
      judgeStep(outputOf(reference_out, outputs, OutputKind::kLogits),
                outputOf(device_out, outputs, OutputKind::kLogits), backend->format());
  prefill_step.passed = prefill_step.passed && prefill_passed;
  int64_t token = note(std::move(prefill_step), report.prompt_length - 1, prefill_run.seconds,
                       [&] { return prefill; });

  const auto cpu = makeBackend(parseBackendSpec("cpu"));
  const auto step_reference = cpu->compile(*step, {});
  for (int64_t i = 1; i <= request.decode_steps; ++i) {
    control.checkCancelled();
    control.progress(
        3, 4, "decode step " + std::to_string(i) + " of " + std::to_string(request.decode_steps));
    const int64_t slot = report.prompt_length + i - 1;
    mask[slot] = 1;
    std::vector<c10::IValue> fed = stepInputs(*step, token, mask, slot, reference);
    const BackendRun expected = step_reference->run(fed, options);
    if (expected.status != BackendRun::Status::kCompleted) {
      throw UserError("the CPU reference's decode step " + std::to_string(i) +
                      " did not complete: " + expected.message);
    }
    const BackendRun ran =
        step_compiled->run(stepInputs(*step, token, mask, slot, device), options);
    if (ran.status == BackendRun::Status::kCancelled) throw Cancelled();
    if (ran.status != BackendRun::Status::kCompleted) {
      focus(i, true, true, [&]() -> std::shared_ptr<const LoadedModel> {
        return withExampleInputs(*step, std::move(fed));
      });
      result.run = describeRun(ran, *step);
      result.verdict = incompleteRunVerdict(ran.status);
      return result;
    }
    const std::vector<at::Tensor> expected_out = flattenTensors(expected.outputs);
    const std::vector<at::Tensor> ran_out = flattenTensors(ran.outputs);
    reference = {outputOf(expected_out, step_outputs, OutputKind::kPastKeys),
                 outputOf(expected_out, step_outputs, OutputKind::kPastValues)};
    device = {outputOf(ran_out, step_outputs, OutputKind::kPastKeys),
              outputOf(ran_out, step_outputs, OutputKind::kPastValues)};
    token = note(judgeStep(outputOf(expected_out, step_outputs, OutputKind::kLogits),
                           outputOf(ran_out, step_outputs, OutputKind::kLogits), backend->format()),
                 slot, ran.seconds, [&]() -> std::shared_ptr<const LoadedModel> {
                   return withExampleInputs(*step, std::move(fed));
                 });
  }
  report.passed = !report.first_failing_step.has_value();
  if (to_localize != nullptr && !to_localize->model) {
    to_localize->model = prefill;
    to_localize->graph = ModelGraph::kPrefill;
  }
  result.verdict = report.passed ? RunVerdict::kPass : RunVerdict::kFail;
  return result;
}

}  // namespace stickler
