// A report as one self-contained HTML page for people: no scripts, fonts or images from
// anywhere, so it opens offline and can be attached to a bug. It shows the triage summary, the
// causal culprit, a per-module chart of the observed error against its threshold, the absorbed
// deviations, the blockers with their repro commands, and the device runs; the JSON document
// rides along in the page for tools.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

std::string renderHtmlReport(const nlohmann::json& report);

}  // namespace stickler
