#include "adapters/engine/adapter_application.h"

#include <algorithm>
#include <future>
#include <set>

#include "adapters/engine/adapter_sandbox.h"
#include "adapters/engine/equivalence/change_region.h"
#include "adapters/engine/equivalence/region_program.h"
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/graph_rewrite.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/sha256.h"
#include "simulator/workers/worker_main.h"

namespace stickler {
namespace {

std::string transformLocation(const AdapterFile& adapter) {
  return adapter.path + ":" + std::to_string(adapter.transform->position.line) + ":" +
         std::to_string(adapter.transform->position.column);
}

// "aten::sum x4 in 2 modules (transformer.h.0.ln_1, ...), aten::div x4": the first operators of
// a change, in the order the change met them.
std::string changedNodesText(const std::vector<ChangedNode>& nodes) {
  struct Group {
    std::string op;
    int count = 0;
    std::set<std::string> modules;
    std::string first_module;
  };
  std::vector<Group> groups;
  for (const ChangedNode& node : nodes) {
    auto found = std::find_if(groups.begin(), groups.end(),
                              [&node](const Group& group) { return group.op == node.op; });
    if (found == groups.end())
      found = groups.insert(groups.end(), Group{node.op, 0, {}, node.module});
    ++found->count;
    found->modules.insert(node.module);
  }
  constexpr size_t kShown = 4;
  std::string text;
  for (size_t i = 0; i < groups.size() && i < kShown; ++i) {
    const Group& group = groups[i];
    const std::string first = group.first_module.empty() ? "the root" : group.first_module;
    text += (i == 0 ? "" : ", ") + group.op +
            (group.count > 1 ? " x" + std::to_string(group.count) : "") +
            (group.modules.size() > 1
                 ? " in " + std::to_string(group.modules.size()) + " modules (" + first + ", ...)"
                 : " in " + first);
  }
  if (groups.size() > kShown)
    text += ", and " + std::to_string(groups.size() - kShown) + " more operators";
  return text;
}

std::string changeText(const GraphChange& change) {
  std::string text = std::to_string(change.rewrites) + " place(s)";
  if (!change.added.empty()) text += "; added " + changedNodesText(change.added);
  if (!change.removed.empty()) text += "; removed " + changedNodesText(change.removed);
  if (!change.placed_on_host.empty()) text += "; moved modules to the host";
  return text;
}

// The adapted model failed on the example inputs the model before it runs on: the adaptation
// is what failed, so say so, with what it changed and the operator that then failed.
[[noreturn]] void throwAdaptationFailed(const AdapterFile& adapter, const GraphChange& change,
                                        const std::string& what) {
  static const std::string kDoesNotRun = "the model does not run on its example inputs: ";
  const size_t at = what.find(kDoesNotRun);
  const std::string failure = at == std::string::npos ? what : what.substr(at + kDoesNotRun.size());
  const std::string subject = adapter.transform ? transformLocation(adapter) + ": the transform " +
                                                      adapter.transform->name + " could not finish"
                                                : adapter.path + ": the rewrite could not finish";
  // "running aten::ones in transformer.h.0.mlp.act (NewGELUActivation) at ...": one of the
  // operators the adaptation added, or one it left that reads what it changed.
  bool added = false;
  static const std::string kRunning = "running ";
  const size_t in = failure.find(" in ");
  if (failure.rfind(kRunning, 0) == 0 && in != std::string::npos) {
    const std::string op = failure.substr(kRunning.size(), in - kRunning.size());
    const size_t end = failure.find(' ', in + 4);
    const std::string module =
        failure.substr(in + 4, end == std::string::npos ? end : end - in - 4);
    for (const ChangedNode& node : change.added) {
      added = added || (node.op == op &&
                        (node.module == module || (node.module.empty() && module == "<root>")));
    }
  }
  throw UserError(subject + ": it changed " + changeText(change) +
                  (added ? ", and the adapted model then fails in an operator it added"
                         : ", and the adapted model then fails where an operator it did not "
                           "adapt still reads what it changed") +
                  " (the model before it runs on the same inputs): " + failure);
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

std::optional<std::string> idempotenceProblem(const AdapterApplication& application,
                                              const DeviceProfile& profile) {
  if (!application.after) return std::nullopt;
  const std::string lead = "not idempotent: applied again to its own output, it ";
  AdapterApplication again;
  try {
    again = applyAdapter(application.adapter, application.after, profile,
                         /*check_equivalence=*/false);
  } catch (const UserError& e) {
    return lead + "fails: " + e.what();
  }
  if (!again.changed()) return std::nullopt;
  return lead + "changes " + changeText(again.change) +
         (application.adapter.transform
              ? ""
              : " (its replacement still contains what its pattern matches: narrow the pattern, "
                "write the replacement so that it does not match, or add a condition)");
}

std::string unchangedReason(const AdapterApplication& application) {
  if (application.refused_by_condition == 0) {
    std::string reason = "nothing in the model matches the adapter";
    for (size_t i = 0; i < application.closest.size(); ++i) {
      reason += (i == 0 ? "; the closest: " : "; ") + application.closest[i];
    }
    return reason;
  }
  std::string reason = "the adapter's condition turned down every match (" +
                       std::to_string(application.refused_by_condition) + ")";
  for (size_t i = 0; i < application.turned_down.size(); ++i) {
    reason += (i == 0 ? ": " : "; ") + application.turned_down[i];
  }
  const size_t more = static_cast<size_t>(application.refused_by_condition) -
                      std::min(application.turned_down.size(),
                               static_cast<size_t>(application.refused_by_condition));
  if (more > 0 && !application.turned_down.empty()) {
    reason += "; and " + std::to_string(more) + " more";
  }
  return reason;
}

std::string adaptedIdentity(const std::string& base_identity, const std::string& adapter_name) {
  return sha256Bytes(base_identity + "+" + adapter_name);
}

AdapterApplication applyAdapter(const AdapterFile& adapter,
                                std::shared_ptr<const LoadedModel> model,
                                const DeviceProfile& profile, bool check_equivalence,
                                RecordFrom record_from) {
  // Code no one has reviewed (a draft) first runs where it cannot hurt the server: applied whole
  // in a sandbox worker. After that, the same runs here computes what it computed there.
  if (!adapter.reviewed && !adapter.transform && !adapterCodeRunsHere()) {
    trialInSandbox(adapter, *model, profile);
    const AdapterCodeRunsHere here;
    return applyAdapter(adapter, std::move(model), profile, check_equivalence, record_from);
  }
  const double start = phaseClock();
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
    RewriteCount count = applyRewrite(rewrite, edit, adapter);
    application.refused_by_condition = count.refused_by_condition;
    application.turned_down = std::move(count.turned_down);
    application.closest = std::move(count.closest);
  }
  application.change = edit.change();
  if (!application.changed()) return application;
  edit.graph().lint();
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
  setWorkerPhase("the adapted model");
  try {
    after = rebuildModel(*model, model->module, edit.takeGraph(),
                         adaptedIdentity(model->sha256, adapter.metadata.name),
                         capture ? &first : nullptr,
                         check_equivalence ? RecordFrom::kValues : record_from);
  } catch (const UserError& e) {
    if (others.valid()) others.wait();
    throwAdaptationFailed(adapter, edit.change(), e.what());
  } catch (...) {
    if (others.valid()) others.wait();
    throw;
  }
  after->host_modules = edit.hostModules();
  after->adapters.push_back(adapter.metadata.name);
  after->recipe.steps.push_back(
      {adapter.metadata.name, adapter.path, adapter.source, adapter.reviewed, profile.path});
  if (edit.change().fixes_shapes) after->card.fixed_shapes = true;
  application.after = std::move(after);
  notePhase("applied " + adapter.metadata.name, phaseClock() - start);
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
    notePhase("checked " + adapter.metadata.name, phaseClock() - start);
  }
  application.equivalence.stated_max_ulps = adapter.metadata.max_ulps;
  return application;
}

}  // namespace stickler
