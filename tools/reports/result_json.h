// The simulator's results as the reports' JSON: the tools layer is the only one that writes
// report documents (docs/check-json.md, docs/run-json.md).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "simulator/compare/output_report.h"
#include "simulator/diagnose/repro_bundle.h"
#include "simulator/graph/model_identity.h"
#include "simulator/lowering/compile_report.h"
#include "simulator/lowering/placement.h"

namespace stickler {

// A measurement that may be missing (not finite): the number, or null.
nlohmann::json numberOrNull(const std::optional<double>& value);

// {"path", "sha256", "name"}
nlohmann::json modelIdentityToJson(const ModelIdentity& model);

// Adds where the model ran to a report: "placement" ("whole model" or the device modules),
// "host_modules" and "host_nodes" (what adapters keep on the host) when there are any.
void addPlacement(nlohmann::json& report, const Placement& placement, int64_t host_nodes);

// The compile section of check, run and diagnose reports (`lowering` in check-json.md).

nlohmann::json compileReportToJson(const CompileReport& report);

// A value description as reports write it: {"kind", "shape", "dtype"} or {"kind", "value"}.
nlohmann::json valueDescsToJson(const std::vector<ValueDesc>& descs);

// {"file", "line"}, or null when the position is unknown.
nlohmann::json sourceLineToJson(const std::optional<SourceLine>& line);

// `comparison.outputs` of a run report: one entry per output (docs/run-json.md).
nlohmann::json outputComparisonToJson(const OutputComparison& comparison);

// A repro bundle as diagnose reports list it.
nlohmann::json reproToJson(const ReproBundle& bundle);

}  // namespace stickler
