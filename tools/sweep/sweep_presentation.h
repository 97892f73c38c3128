// What the sweep operations (sweep, sweep merge) share: their text for people, their output
// schema, and the retention policy's input properties.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tools/reports/report_retention.h"

namespace stickler {

// A sweep document (stickler.sweep) in a few lines: coverage, categories, the blockers that
// block the most models, what broke since the previous sweep, where the documents went.
std::string renderSweepText(const nlohmann::json& sweep);

nlohmann::json sweepOutputSchema();

// The sweep as a result for a caller that pages long lists (`limit` > 0, over MCP): every
// count, and the first `limit` models that do not pass in place of all of them (the whole
// document is sweep.json in the output directory).
nlohmann::json pagedSweep(nlohmann::json sweep, size_t limit);

// "keep_sweeps" and "keep_days": how much history, and how old reports and repros, to keep.
nlohmann::json retentionProperties();
// The policy those properties give (filled with their defaults by runOperation).
RetentionPolicy retentionFromInput(const nlohmann::json& input);

}  // namespace stickler
