#include "tools/adapters/bring_up.h"

#include "simulator/diagnose/causal_localization.h"
#include "simulator/graph/model_cache.h"
#include "simulator/graph/model_facts.h"
#include "simulator/lowering/check_support.h"
#include "simulator/run/run_decode.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"

namespace stickler {
namespace {

bool isWeightless(const LoadedModel& model) {
  const nlohmann::json& config = cardOf(model).config;
  return config.is_object() && config.contains("weightless") && config["weightless"] == true;
}

// The adapters the forward took, applied to the decode graphs in the same order, then the
// decode run on them.
void decodeAfterAdapting(const BringUpRequest& request, const TaskControl& control,
                         BringUpResult& result) {
  std::vector<const CatalogEntry*> entries;
  for (const std::string& name : result.stack->names()) {
    if (request.catalog == nullptr) break;
    for (const CatalogEntry& entry : *request.catalog) {
      if (entry.name == name) entries.push_back(&entry);
    }
  }
  control.checkCancelled();
  result.decode_adaptation =
      adaptDecodeGraphs(request.model, request.seed, entries, result.profile, !result.weightless);
  RunRequest run_request;
  run_request.model = request.model;
  run_request.backend = spyreSimBackend(request.profile);
  run_request.timeout_seconds = request.run_seconds;
  run_request.decode_steps = request.decode_steps;
  run_request.decode_prefill = result.decode_adaptation->prefill;
  run_request.decode_step = result.decode_adaptation->step;
  result.decode = runDecode(run_request, control);
}

}  // namespace

bool forwardPassed(const BringUpResult& so_far) {
  return so_far.run && so_far.run->verdict == RunVerdict::kPass;
}

BringUpResult bringUp(const BringUpRequest& request, const TaskControl& control) {
  BringUpResult result;
  if (request.stack != nullptr) {
    result.stack = request.stack;
  } else {
    result.own_stack = std::make_shared<AdapterStack>(
        request.original ? request.original : loadModelSeeded(request.model, request.seed));
    result.stack = result.own_stack.get();
  }
  AdapterStack& stack = *result.stack;
  result.original = stack.original();
  result.profile = loadProfile(request.profile);
  result.weightless = isWeightless(*result.original);
  if (request.decode_steps > 0 && !cardOf(*result.original).decode) {
    throw UserError(request.model +
                    ": its model card has no decode interface (docs/model-card.md "
                    "\"Decoding\" says how to export one)");
  }
  if (request.compile_reports) result.without = compileLoaded(*result.original, result.profile);
  control.checkCancelled();

  const auto run = [&] {
    if (request.run_if && !request.run_if(result)) return;
    if (request.before_run) request.before_run();
    RunRequest run_request;
    run_request.model = request.model;
    run_request.inputs = request.input_flags;
    if (request.cache == nullptr) run_request.loaded = stack.current();
    run_request.backend = spyreSimBackend(request.profile);
    run_request.timeout_seconds = request.run_seconds;
    result.run = runModel(run_request, control, request.cache);
  };
  const std::vector<const CatalogEntry*> meant =
      request.catalog ? adaptersMeantFor(*request.catalog, *result.original, &result.profile)
                      : std::vector<const CatalogEntry*>{};
  const StackingChecks checks =
      result.weightless ? StackingChecks::kUnchecked : StackingChecks::kChecked;
  if (request.run_beside_check) {
    result.stacking = stackAdapters(stack, meant, result.profile, checks, run);
    if (result.stacking.beside_outdated) run();
    if (request.compile_reports) result.with = compileLoaded(*stack.current(), result.profile);
  } else {
    result.stacking = stackAdapters(stack, meant, result.profile, checks);
    if (request.compile_reports) result.with = compileLoaded(*stack.current(), result.profile);
    control.checkCancelled();
    run();
  }
  if (request.decode_steps > 0 && (!request.decode_if || request.decode_if(result))) {
    decodeAfterAdapting(request, control, result);
  }
  if (request.localize && result.run && result.run->verdict == RunVerdict::kFail) {
    LocalizeOptions localize;
    localize.backend = spyreSimBackend(request.profile);
    localize.timeout_seconds = request.run_seconds;
    localize.operators = false;  // a sweep sorts by module; the operator is for a session
    localize.control = control;
    result.localization = localizeDivergence(*stack.current(), localize);
  }
  return result;
}

}  // namespace stickler
