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

}  // namespace

AdaptedDecode decodeWithAdapters(const DecodeWithAdapters& request, const TaskControl& control) {
  std::vector<const CatalogEntry*> entries;
  for (const std::string& name : request.forward.names()) {
    for (const CatalogEntry* entry : request.catalog) {
      if (entry->name == name) entries.push_back(entry);
    }
  }
  control.checkCancelled();
  AdaptedDecode decoded{
      adaptDecodeGraphs(request.model, request.seed, entries, request.profile, request.checked),
      {}};
  RunRequest run_request;
  run_request.model = request.model;
  run_request.backend = spyreSimBackend(request.profile_name);
  run_request.timeout_seconds = request.run_seconds;
  run_request.decode_steps = request.steps;
  run_request.decode_prefill = decoded.adaptation.prefill;
  run_request.decode_step = decoded.adaptation.step;
  decoded.run = runDecode(run_request, control);
  return decoded;
}

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
  // The compile report with the adapters comes before the run, which may depend on it.
  const auto compileAndRun = [&] {
    if (request.compile_reports) result.with = compileLoaded(*stack.current(), result.profile);
    control.checkCancelled();
    run();
  };
  if (request.run_beside_check) {
    result.stacking = stackAdapters(stack, meant, result.profile, checks, compileAndRun);
    if (result.stacking.beside_outdated) compileAndRun();
  } else {
    result.stacking = stackAdapters(stack, meant, result.profile, checks);
    compileAndRun();
  }
  if (request.decode_steps > 0 && (!request.decode_if || request.decode_if(result))) {
    std::vector<const CatalogEntry*> catalog;
    if (request.catalog != nullptr) {
      for (const CatalogEntry& entry : *request.catalog) catalog.push_back(&entry);
    }
    AdaptedDecode decoded = decodeWithAdapters(
        {request.model, request.seed, *result.stack, catalog, result.profile, request.profile,
         !result.weightless, request.decode_steps, request.run_seconds},
        control);
    result.decode_adaptation = std::move(decoded.adaptation);
    result.decode = std::move(decoded.run);
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
