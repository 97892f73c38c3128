#include "adapters/engine/decode_adaptation.h"

#include "adapters/engine/adapter_application.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/decode_card.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

std::shared_ptr<const LoadedModel> adaptGraph(const std::string& path, uint64_t seed,
                                              ModelGraph graph,
                                              const std::vector<const CatalogEntry*>& entries,
                                              const DeviceProfile& profile, bool checked,
                                              std::vector<std::string>& applied,
                                              std::vector<DecodeGraphRefusal>& refused) {
  LoadOptions options;
  options.graph = graph;
  options.seed = seed;
  // A checked adapter's adapted graph records from values (its check captures what the changed
  // region reads), so the graph as loaded need not: its own example run would be read by
  // nothing but a prefill no adapter changed, which is loaded again below for its outputs.
  options.records_from_shapes = checked;
  std::shared_ptr<const LoadedModel> model = loadModel(path, options);
  const std::string name = modelGraphName(graph);
  for (const CatalogEntry* entry : entries) {
    if (!entry->file) continue;
    AdapterApplication application;
    try {
      application = applyAdapter(*entry->file, model, profile, checked);
    } catch (const UserError& e) {
      refused.push_back({name, entry->name, e.what()});
      continue;
    }
    if (!application.changed()) {
      // The forward needed it; what it rewrote there is not in this graph (a table the
      // forward computed from constant positions, which this graph reads from its inputs).
      refused.push_back({name, entry->name,
                         "it changed nothing in this graph: what it rewrote in the forward is "
                         "not here, or depends on this graph's inputs"});
      continue;
    }
    // A rewrite folds only what constants, weights and sizes determine, and a decode step's
    // inputs have the same shapes every step: its folds hold for every step. A transform that
    // fixes shapes may evaluate with zeros standing in for inputs (precompute_tables: the
    // positions a step reads from cache_position), which holds for the example's step only.
    if (graph == ModelGraph::kDecodeStep && application.change.fixes_shapes &&
        entry->file->transform) {
      refused.push_back({name, entry->name,
                         "it folds values computed for the example's positions (fixes_shapes); "
                         "a decode step reads a new position every step"});
      continue;
    }
    if (checked && !application.accepted()) {
      refused.push_back({name, entry->name,
                         "refused by the equivalence check: " + application.equivalence.problem()});
      continue;
    }
    applied.push_back(entry->name);
    model = application.after;
  }
  // The prefill's example outputs are the decode's reference.
  if (graph == ModelGraph::kPrefill && model->records_from_shapes) {
    options.records_from_shapes = false;
    model = loadModel(path, options);
  }
  return model;
}

}  // namespace

DecodeAdaptation adaptDecodeGraphs(const std::string& path, uint64_t seed,
                                   const std::vector<const CatalogEntry*>& entries,
                                   const DeviceProfile& profile, bool checked) {
  DecodeAdaptation adaptation;
  adaptation.prefill = adaptGraph(path, seed, ModelGraph::kPrefill, entries, profile, checked,
                                  adaptation.prefill_applied, adaptation.refused);
  adaptation.step = adaptGraph(path, seed, ModelGraph::kDecodeStep, entries, profile, checked,
                               adaptation.step_applied, adaptation.refused);
  return adaptation;
}

}  // namespace stickler
