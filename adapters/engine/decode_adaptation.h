// The adapters a model's forward took, applied alike to the prefill and step graphs of its
// decode interface (docs/adapter-format.md "Decode graphs"), each checked for equivalence on
// the graph's own example inputs. An adapter that folds values computed for the example's
// shapes (a rotary table: GraphChange::fixes_shapes) is refused on the step graph: a step reads
// a new position every step, and a table folded for one is wrong for the next.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/engine/adapter_catalog.h"

namespace stickler {

struct DeviceProfile;
struct LoadedModel;

struct DecodeGraphRefusal {
  std::string graph;  // "prefill" or "decode_step"
  std::string adapter;
  std::string reason;
};

struct DecodeAdaptation {
  std::shared_ptr<const LoadedModel> prefill;  // with the adapters that applied
  std::shared_ptr<const LoadedModel> step;
  std::vector<std::string> prefill_applied;  // in order
  std::vector<std::string> step_applied;
  std::vector<DecodeGraphRefusal> refused;
};

// `entries` in the order the forward took them. `checked` false applies them unchecked (a
// weightless archive, as for its forward).
DecodeAdaptation adaptDecodeGraphs(const std::string& path, uint64_t seed,
                                   const std::vector<const CatalogEntry*>& entries,
                                   const DeviceProfile& profile, bool checked);

}  // namespace stickler
