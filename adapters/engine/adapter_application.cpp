#include "adapters/engine/adapter_application.h"

#include <future>

#include "adapters/engine/adapter_sandbox.h"
#include "adapters/engine/equivalence/change_region.h"
#include "adapters/engine/equivalence/region_program.h"
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/graph_rewrite.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/sha256.h"

namespace stickler {
namespace {

std::string transformLocation(const AdapterFile& adapter) {
  return adapter.path + ":" + std::to_string(adapter.transform->position.line) + ":" +
         std::to_string(adapter.transform->position.column);
}

}  // namespace

void validateAdapter(const AdapterFile& adapter) {
  if (adapter.transform) {
    nlohmann::json arguments = adapter.transform->arguments;
    resolveTransform(adapter.transform->name, arguments, transformLocation(adapter));
  } else {
    compileRewrite(adapter);
  }
}

std::string adaptedIdentity(const std::string& base_identity, const std::string& adapter_name) {
  return sha256Bytes(base_identity + "+" + adapter_name);
}

AdapterApplication applyAdapter(const AdapterFile& adapter,
                                std::shared_ptr<const LoadedModel> model,
                                const DeviceProfile& profile, bool check_equivalence) {
  AdapterApplication application;
  application.adapter = adapter;
  application.before = model;
  GraphEdit edit(*model);
  if (adapter.transform) {
    nlohmann::json arguments = adapter.transform->arguments;
    const std::string where = transformLocation(adapter);
    const BuiltinTransform& transform = resolveTransform(adapter.transform->name, arguments, where);
    try {
      transform.apply(arguments, edit, profile);
    } catch (const UserError& e) {
      throw UserError(where + ": " + e.what());
    }
  } else {
    const CompiledRewrite rewrite = compileRewrite(adapter);
    application.refused_by_condition =
        applyRewrite(rewrite, edit, adapter.path).refused_by_condition;
  }
  application.change = edit.change();
  if (!application.changed()) return application;
  edit.graph().lint();
  // Code no one has reviewed (a draft) first runs where it cannot hurt the server: the adapted
  // model's example run in a worker under the sandbox's memory and CPU limits. After that, the
  // same runs in this process allocate what they did there.
  if (!adapter.reviewed && !adapter.transform) {
    runAdaptedModelSandboxed(*model, edit.graph(), adapter.path);
  }
  // The region is found twice: from the graphs alone before the adapted model first runs, so
  // that its run records shapes and captures the first input draw at once, while the model
  // before it runs the other draws beside it; then with what each node saw, which also catches
  // padding flowing through operators the edit did not touch. Only when the two differ are the
  // draws captured again.
  const NodeOrigin origin = [&edit](const torch::jit::Node* node) { return edit.originalOf(node); };
  ChangeRegion region;
  if (check_equivalence) region = findChangeRegion(*model, edit.graph(), origin);
  const bool capture = region.kind == ChangeRegion::Kind::kRegion;
  const int draws = equivalenceDraws(*model);
  std::future<CapturedDraws> others;
  if (capture && !region.captured_before.empty()) {
    others =
        std::async(std::launch::async, [&model, &region, draws, limit = currentExecutionLimit()] {
          const ExecutionLimitScope scope(limit);
          return captureDraws(*model, region.captured_before, 1, draws);
        });
  }
  ValueCapture first(region.captured);
  first.captureInputs(model->example_inputs);
  std::unique_ptr<LoadedModel> after;
  try {
    after = rebuildModel(*model, model->module, edit.takeGraph(),
                         adaptedIdentity(model->sha256, adapter.metadata.name),
                         capture ? &first : nullptr);
  } catch (...) {
    if (others.valid()) others.wait();
    throw;
  }
  after->host_modules = edit.hostModules();
  if (edit.change().fixes_shapes) after->card.fixed_shapes = true;
  application.after = std::move(after);
  if (check_equivalence) {
    const ChangeRegion seen =
        findChangeRegion(*model, *application.after->graph, origin, &application.after->records);
    const bool same = capture && seen.kind == region.kind && seen.modules == region.modules;
    CapturedDraws feeds;
    if (others.valid()) feeds = others.get();
    if (same) {
      if (feeds.draws.size() != static_cast<size_t>(draws)) {
        feeds = captureDraws(*application.after, region.captured, 1, draws);
      }
      feeds.draws[0] = first.values();
    }
    application.equivalence =
        checkAdaptation(*model, *application.after, same ? region : seen, same ? &feeds : nullptr);
  }
  application.equivalence.stated_max_ulps = adapter.metadata.max_ulps;
  return application;
}

}  // namespace stickler
