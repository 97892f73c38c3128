#include "adapters/engine/adapter_stacking.h"

#include <algorithm>
#include <atomic>
#include <future>

#include "adapters/engine/equivalence/equivalence.h"
#include "adapters/engine/stacking_record.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/task_control.h"

namespace stickler {
namespace {

StackingOutcome stackUnchecked(AdapterStack& stack, const std::vector<const CatalogEntry*>& entries,
                               const DeviceProfile& profile) {
  StackingOutcome outcome;
  outcome.checked = false;
  for (const CatalogEntry* entry : entries) {
    if (!entry->file || stack.contains(entry->name)) continue;
    try {
      AdapterApplication application =
          applyAdapter(*entry->file, stack.current(), profile, /*check_equivalence=*/false);
      if (!application.changed()) continue;
      stack.push(std::move(application));
      ++outcome.pushed;
    } catch (const UserError& error) {  // cannot apply to this model: the others still may
      outcome.refused.push_back({entry->name, error.what(), std::nullopt});
    }
  }
  return outcome;
}

// The adapters a remembered stacking pushed, applied again without their checks; none (and
// the stack as it was) when one of them no longer applies as it did.
std::optional<StackingOutcome> stackRemembered(AdapterStack& stack,
                                               const std::vector<const CatalogEntry*>& entries,
                                               const DeviceProfile& profile,
                                               const RememberedStacking& remembered,
                                               const BeforeReference& before_reference = {}) {
  const std::vector<std::string>& pushed = remembered.pushed;
  StackingOutcome outcome;
  outcome.remembered = true;
  const auto undo = [&] {
    for (; outcome.pushed > 0; --outcome.pushed) stack.revert("", profile);
    return std::nullopt;
  };
  for (size_t i = 0; i < pushed.size(); ++i) {
    const std::string& name = pushed[i];
    const auto entry = std::find_if(entries.begin(), entries.end(), [&](const CatalogEntry* e) {
      return e->name == name && e->file && !stack.contains(name);
    });
    if (entry == entries.end()) return undo();
    // Only the last model's outputs are read (the diagnosis's reference): the ones before it
    // record from shapes, which is all an adapter reads of them, without a CPU run each. The
    // last does too when `before_reference` is to see it before its reference run.
    const bool last = i + 1 == pushed.size();
    const RecordFrom record_from =
        last && !before_reference ? RecordFrom::kValues : RecordFrom::kShapes;
    try {
      AdapterApplication application = applyAdapter(*(*entry)->file, stack.current(), profile,
                                                    /*check_equivalence=*/false, record_from);
      if (!application.changed()) return undo();
      if (last && before_reference && application.after->records_from_shapes) {
        // Its records are the ones adapt checked (from values) when they give the remembered
        // result; a model host made from shapes then lowers the model as this process will.
        if (stackingResult(*application.after) == remembered.result) {
          before_reference(application.after);
        }
        application.after =
            withExampleInputs(*application.after, application.after->example_inputs);
      }
      stack.push(std::move(application));
      ++outcome.pushed;
    } catch (const UserError&) {
      return undo();
    }
  }
  if (outcome.pushed > 0 && stackingResult(*stack.current()) != remembered.result) return undo();
  return outcome;
}

}  // namespace

std::vector<std::string> StackingOutcome::pushedNames(const AdapterStack& stack) const {
  std::vector<std::string> names;
  const auto& applied = stack.applied();
  for (size_t i = applied.size() - std::min(pushed, applied.size()); i < applied.size(); ++i) {
    names.push_back(applied[i].adapter.metadata.name);
  }
  return names;
}

StackingOutcome stackAdapters(AdapterStack& stack, const std::vector<const CatalogEntry*>& entries,
                              const DeviceProfile& profile, StackingChecks checks,
                              const std::function<void()>& beside) {
  if (checks == StackingChecks::kUnchecked) {
    StackingOutcome outcome = stackUnchecked(stack, entries, profile);
    if (beside) beside();
    return outcome;
  }
  const std::string key = stackingKey(stack, entries, profile);
  if (checks == StackingChecks::kCheckedOrRemembered || checks == StackingChecks::kRememberedOnly) {
    if (const auto remembered = rememberedStacking(key)) {
      if (auto outcome = stackRemembered(stack, entries, profile, *remembered)) {
        if (beside) beside();
        return std::move(*outcome);
      }
    }
  }
  if (checks == StackingChecks::kRememberedOnly) {
    StackingOutcome none;
    none.checked = false;
    if (beside) beside();
    return none;
  }
  StackingOutcome outcome;
  // The whole stack is judged against the original model's float64 results, which no adapter
  // changes: they are computed on a thread of their own beside the adapters, and abandoned if
  // none of them changes what runs.
  std::atomic<bool> truth_unneeded{false};
  std::future<std::shared_ptr<const Float64Truth>> truth;
  if (!entries.empty()) {
    truth = std::async(std::launch::async, [original = stack.original(), &truth_unneeded,
                                            limit = currentExecutionLimit()] {
      const ExecutionLimitScope scope(limit);
      return computeFloat64Truth(*original, &truth_unneeded);
    });
  }
  // Leaving early (an error) abandons it too, rather than waiting for it.
  struct Abandon {
    std::atomic<bool>& flag;
    ~Abandon() { flag = true; }
  } abandon{truth_unneeded};
  for (const CatalogEntry* entry : entries) {
    if (!entry->file || stack.contains(entry->name)) continue;
    AdapterApplication application;
    try {
      application = applyAdapter(*entry->file, stack.current(), profile);
    } catch (const UserError& e) {  // cannot apply to this model: the others still may
      outcome.refused.push_back({entry->name, e.what(), std::nullopt});
      continue;
    }
    if (!application.changed()) continue;
    if (!application.accepted()) {
      outcome.refused.push_back(
          {entry->name, "refused by the equivalence check: " + application.equivalence.problem(),
           application.equivalence});
      continue;
    }
    stack.push(std::move(application));
    ++outcome.pushed;
  }
  // Once at the end of the stack: the whole model, the original against the adapted one.
  bool computes_differently = false;
  for (size_t i = stack.applied().size() - outcome.pushed; i < stack.applied().size(); ++i) {
    computes_differently = computes_differently || stack.applied()[i].equivalence.verdict !=
                                                       EquivalenceResult::Verdict::kUnchanged;
  }
  truth_unneeded = !computes_differently;
  std::shared_ptr<const Float64Truth> original_truth;
  const auto checkWhole = [&](const std::atomic<bool>* cancelled) {
    const double start = phaseClock();
    if (!original_truth && truth.valid()) original_truth = truth.get();
    EquivalenceResult whole =
        checkWholeModel(*stack.original(), *stack.current(), 1, original_truth.get(), cancelled);
    notePhase("checked the whole adapted model against the original", phaseClock() - start);
    return whole;
  };
  std::optional<EquivalenceResult> first;
  if (beside) {
    std::atomic<bool> stop{false};
    std::future<std::optional<EquivalenceResult>> check;
    if (outcome.pushed > 0 && computes_differently) {
      check =
          std::async(std::launch::async,
                     [&, limit = currentExecutionLimit()]() -> std::optional<EquivalenceResult> {
                       const ExecutionLimitScope scope(limit);
                       try {
                         return checkWhole(&stop);
                       } catch (const Cancelled&) {
                         return std::nullopt;
                       }
                     });
    }
    try {
      beside();
    } catch (...) {
      stop = true;
      truth_unneeded = true;
      if (check.valid()) check.wait();
      throw;
    }
    if (check.valid()) first = check.get();
  }
  while (outcome.pushed > 0 && computes_differently) {
    const EquivalenceResult whole = first ? *first : checkWhole(nullptr);
    first.reset();
    outcome.whole_model = whole;
    if (whole.accepted()) break;
    const AdapterApplication removed = stack.revert("", profile);
    outcome.refused.push_back(
        {removed.adapter.metadata.name,
         "the whole adapted model failed the equivalence check with it on top: " + whole.problem(),
         whole});
    outcome.beside_outdated = static_cast<bool>(beside);
    --outcome.pushed;
  }
  // Refusals are not remembered: one for what an adapter's code did (an error, a sandbox
  // limit, time) may go otherwise next time.
  if (outcome.refused.empty()) {
    rememberStacking(key, {outcome.pushedNames(stack), stackingResult(*stack.current())});
  }
  return outcome;
}

std::optional<RememberedAdaptation> rememberedAdaptation(
    const std::string& model_path, const std::vector<std::string>& input_flags,
    const std::function<std::vector<const CatalogEntry*>(const LoadedModel&)>& meant_for,
    const DeviceProfile& profile, const BeforeReference& before_reference) {
  LoadOptions options = loadOptionsFromFlags(input_flags);
  options.records_from_shapes = true;
  AdapterStack stack(loadModel(model_path, options));
  const std::vector<const CatalogEntry*> entries = meant_for(*stack.current());
  const std::optional<RememberedStacking> remembered =
      rememberedStacking(stackingKey(stack, entries, profile));
  if (!remembered) return std::nullopt;
  const std::optional<StackingOutcome> stacking =
      stackRemembered(stack, entries, profile, *remembered, before_reference);
  if (!stacking || stacking->pushed == 0 || stack.current()->records_from_shapes) {
    return std::nullopt;
  }
  return RememberedAdaptation{stack.current(), stacking->pushedNames(stack)};
}

}  // namespace stickler
