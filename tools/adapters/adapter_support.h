// What the adapter tools share: the catalog as the caller sees it (shipped plus workspace),
// the session's stack of applied adapters for a model, and how results are reported.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_stack.h"
#include "adapters/engine/adapter_stacking.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_cache.h"
#include "tools/framework/operation.h"

namespace stickler {

class WorkspaceCatalog;

// The workspace's catalog repository: <workspace root>/stickler-adapters.
std::string workspaceCatalogDir(OperationContext& context);

// The shipped catalog with the workspace's adapters (main and drafts) over it.
std::vector<CatalogEntry> adapterCatalog(OperationContext& context);

// The catalog at a tree of the workspace catalog (main, or main with a proposal) over the
// shipped one; `unreviewed` adapters (a proposal's) are labelled drafts and run sandboxed.
std::vector<CatalogEntry> catalogAtTree(const WorkspaceCatalog& catalog, const std::string& tree,
                                        const std::vector<std::string>& unreviewed);

// What reviewers accepted: the shipped catalog with the workspace catalog's main over it (no
// drafts), or the shipped catalog alone in a workspace without one. What sweeps measure.
std::vector<CatalogEntry> acceptedCatalog(OperationContext& context);

// One model's adapters in this call: the session's stack (MCP) or a fresh one (CLI). Holds
// the session's adapter lock for as long as it lives, so concurrent calls take turns.
class ModelAdapters {
 public:
  ModelAdapters(OperationContext& context, const std::string& model_path,
                const std::vector<std::string>& input_flags);
  AdapterStack& stack() { return *stack_; }
  // Makes check_support, run_model and the rest of the session see the stack's model.
  void publish();
  // A cache holding the adapted model, for the simulator's entry points (runModel).
  ModelCache* cache() { return cache_; }
  const std::string& path() const { return path_; }
  const std::vector<std::string>& inputFlags() const { return input_flags_; }

 private:
  std::string path_;
  std::vector<std::string> input_flags_;
  std::unique_ptr<ModelCache> local_cache_;
  std::unique_ptr<AdapterStacks> local_stacks_;
  ModelCache* cache_ = nullptr;
  std::unique_lock<std::mutex> lock_;
  AdapterStack* stack_ = nullptr;
};

// For an adapter from the workspace catalog: an evidence commit on its draft branch, so its
// history shows where it worked and how well. Returns the commit id ("" for shipped adapters).
std::string recordEvidence(OperationContext& context, const std::string& adapter,
                           const std::string& origin, const std::string& summary,
                           const std::vector<std::pair<std::string, std::string>>& trailers);
// The catalog entries meant for `model` (its family or name) and, unless `profile` is null,
// listed for that profile or one it extends, in catalog order.
std::vector<const CatalogEntry*> adaptersMeantFor(const std::vector<CatalogEntry>& catalog,
                                                  const LoadedModel& model,
                                                  const DeviceProfile* profile);

// What a call that changed the session's model leaves there: the whole stack, in order, and
// what that means for the calls after it. Every tool that changes the session returns it.
nlohmann::json sessionStackToJson(const AdapterStack& stack);
// The path an adapter applied from inline source (apply_adapter's `source`) is known by: it is
// on the session's stack only, never in a catalog.
inline constexpr const char* kInlineAdapterPrefix = "inline:";
inline bool isInlineAdapter(const AdapterFile& adapter) {
  return adapter.path.rfind(kInlineAdapterPrefix, 0) == 0;
}
// The sentence tool descriptions use for it.
extern const char* const kChangesTheSession;

// The model a diagnosis works on: the session's, with the adapters applied to it there, and
// with `adapt_for` the catalog's adapters meant for it and that profile applied on top, on a
// stack of the call's own (the session does not change), skipping those the session already
// has; their names go to `applied` (the model's identity lists the whole stack). The
// session's lock is released before returning, so long device runs do not hold it. On a
// command line, `before_reference` sees the model recorded from shapes before it runs for its
// reference, when the archive (or, with `adapt_for`, a stacking adapt checked) is loaded that
// way: a checked stacking records from values as it goes, and a session keeps its models.
std::shared_ptr<const LoadedModel> modelToDiagnose(OperationContext& context,
                                                   const std::string& model_path,
                                                   const std::vector<std::string>& input_flags,
                                                   const DeviceProfile* adapt_for,
                                                   nlohmann::json* applied,
                                                   const BeforeReference& before_reference = {});

nlohmann::json applicationToJson(const AdapterApplication& application, size_t limit);

// A decode reads the archive's own prefill and step graphs: a UserError naming `tool` when the
// session applied adapters to the model, which such a decode would silently leave out
// (adapt_model with decode applies them to the decode graphs).
void refuseDecodeOfSessionAdaptedModel(OperationContext& context, const std::string& model_path,
                                       const std::string& tool);

// What a stacking (adapters/engine/adapter_stacking.h) did, as the reports say it: "applied"
// (each pushed adapter as applicationToJson, lists bounded by `limit`; unchecked, its name and
// that it was not checked), "refused" ({adapter, reason, equivalence when a check refused it}),
// and "whole_model" (the check of the whole stack) when one ran.
nlohmann::json stackingToJson(const StackingOutcome& outcome, const AdapterStack& stack,
                              size_t limit);

// One line for an equivalence result (equivalenceToJson), for text output and evidence:
// "equivalent (region of 2 module calls, 3 input draws): float64 difference 0.0012 of its
// tolerance, float32 error 1x the original's; bitwise equal in float32", or what failed.
std::string equivalenceLine(const nlohmann::json& equivalence);
std::string equivalenceText(const EquivalenceResult& result);

// The check of the whole stack once at its end, after `application` (not yet pushed) would go
// on top of `stack`: the stack's original model against the adapted one, on the example inputs.
// Nothing runs (and the result is empty) when the application left the computation unchanged.
std::optional<EquivalenceResult> checkStackEnd(const AdapterStack& stack,
                                               const AdapterApplication& application);
// {"total": N, "by_rule": {...}, "blockers": [{rule, op, module, count}...]}
nlohmann::json blockersLeftToJson(const LoadedModel& model, const DeviceProfile& profile,
                                  size_t limit);
nlohmann::json adapterMetadataToJson(const CatalogEntry& entry);

// The profile named by the input's "profile" field (filled with the schema's default by
// runOperation when not given), loaded.
DeviceProfile profileFromInput(const nlohmann::json& input, OperationContext& context);

// Input-schema properties the adapter tools share.
nlohmann::json adapterNameField(const char* description);

}  // namespace stickler
