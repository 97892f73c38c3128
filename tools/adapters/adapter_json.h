// The adapter engine's results as the reports' JSON: what an adapter matches, what it changed
// in the graph, and its equivalence check (docs/adapter-format.md).
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_matching.h"
#include "adapters/engine/equivalence/equivalence.h"
#include "adapters/engine/graph_change.h"

namespace stickler {

nlohmann::json adapterMatchToJson(const AdapterMatch& match);

// {"rewrites": N, "removed": [{"op", "module", "count"}...], "added": [...], "folded": N,
// "fixes_shapes": bool}, nodes of the same op in the same module counted together, at most
// `limit` entries per list (0: all).
nlohmann::json graphChangeToJson(const GraphChange& change, size_t limit = 0);

nlohmann::json equivalenceToJson(const EquivalenceResult& result);

}  // namespace stickler
