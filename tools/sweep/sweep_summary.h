// What a sweep found, counted: coverage, categories, families, the blocker ranking, and what
// changed since the previous sweep. The JSON document, the HTML page, JUnit and coverage_report
// all read these (docs/sweeps.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

// The categories of a model's outcome, in the order reports list them: pass first, then what
// needs work. A category is its kind with what it names: "unsupported op aten::topk".
const std::vector<std::string>& categoryKinds();
// "unsupported op aten::topk" -> "unsupported op".
std::string categoryKind(const std::string& category);

// {"models", "covered", "passing", "by_category": {kind: n}, "by_family": {family: {models,
// covered, passing}}, "blockers": [{"blocker", "models", "examples"}] most models first}.
nlohmann::json summarizeSweep(const nlohmann::json& models);

// The models whose outcome changed from `previous` to `current` (stickler.sweep documents):
// {"previous": id, "newly_broken": [...], "newly_fixed": [...], "changed": [...], "added": [...],
// "removed": [...]}, each entry with the model, its category before and after, and why.
nlohmann::json diffSweeps(const nlohmann::json& previous, const nlohmann::json& current);

// The entries of `models` comparable across machines and shardings: what was found, not when
// or how long it took (a merged sweep equals an unsharded one in these).
nlohmann::json outcomesOf(const nlohmann::json& models);

}  // namespace stickler
