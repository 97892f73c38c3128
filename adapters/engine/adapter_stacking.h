// Applying a list of adapters to a model's stack in turn: each that changes the model and passes
// its equivalence check is pushed, the rest are refused with the reason, and then the whole stack
// is checked once against the original (while it fails, the adapter on top comes off again). The
// outcome is data; the tools say it (tools/adapters/adapter_json.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_stack.h"
#include "simulator/graph/before_reference.h"

namespace stickler {

struct DeviceProfile;

struct StackingRefusal {
  std::string adapter;
  std::string reason;                            // a UserError's text, or why the check refused it
  std::optional<EquivalenceResult> equivalence;  // when an equivalence check refused it
};

struct StackingOutcome {
  // How many adapters this call pushed: the top `pushed` entries of the stack, in order.
  size_t pushed = 0;
  std::vector<StackingRefusal> refused;
  bool checked = true;  // false: applied without equivalence checks
  // The checks of an identical stacking, made earlier and remembered (stacking_record.h), were
  // relied on: none ran now, and there is no whole_model result.
  bool remembered = false;
  std::optional<EquivalenceResult> whole_model;  // the check of the whole stack, when one ran
  // `beside` ran for a stack the whole-model check then took adapters off.
  bool beside_outdated = false;

  std::vector<std::string> pushedNames(const AdapterStack& stack) const;
};

enum class StackingChecks {
  kChecked,    // each adapter and the whole stack checked for equivalence
  kUnchecked,  // none: a weightless archive, whose zero weights every rewrite computes alike
  // Checked, unless an identical stacking was checked before and every adapter passed: then
  // the adapters it pushed are applied unchecked (a diagnosis after adapt; never the gate).
  kCheckedOrRemembered,
  // The remembered stacking only, applied unchecked; nothing when there is none or it no longer
  // applies (StackingOutcome::remembered says which). For a model whose records came from shapes
  // (a command line's diagnosis, which reads the last adapted model's outputs only), which
  // cannot be checked.
  kRememberedOnly,
};

// Applies `entries` in order on top of `stack`, skipping those the stack has and those that do not
// parse. Entries that match nothing are passed over silently. A checked stacking in which no
// adapter was refused is remembered across processes (stacking_record.h).
//
// `beside`, when given, runs on the calling thread while the first whole-stack check runs on
// another: adapt's device run, a model host's work that leaves this process's cores idle, goes
// beside the check's float64 run instead of after it. An exception from `beside` stops the check
// and goes to the caller. The original's float64 results are computed on a thread of their own
// while the adapters apply (workers are exec'd, never forked, so threads in LibTorch are no
// hazard).
StackingOutcome stackAdapters(AdapterStack& stack, const std::vector<const CatalogEntry*>& entries,
                              const DeviceProfile& profile,
                              StackingChecks checks = StackingChecks::kChecked,
                              const std::function<void()>& beside = {});

// A command line's diagnosis after adapt (localize and diagnose with adapt), which reads the
// adapted model's outputs only (its reference): the archive and every adapted model but the
// last record from shapes (LoadOptions::records_from_shapes), and the stacking adapt checked is
// applied again (kRememberedOnly), which must make the model the checks passed
// (stackingResult). At 8B that spares a CPU run of the model, half a minute. None when no
// stacking of the entries `meant_for` the model gives is remembered, or it no longer applies
// alike, or it pushed none.
//
// `before_reference`, when given, sees the last model recorded from shapes, before it runs its
// example inputs for the reference, when its records are the ones adapt checked.
struct RememberedAdaptation {
  std::shared_ptr<const LoadedModel> model;
  std::vector<std::string> pushed;
};
std::optional<RememberedAdaptation> rememberedAdaptation(
    const std::string& model_path, const std::vector<std::string>& input_flags,
    const std::function<std::vector<const CatalogEntry*>(const LoadedModel&)>& meant_for,
    const DeviceProfile& profile, const BeforeReference& before_reference = {});

}  // namespace stickler
