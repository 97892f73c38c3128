// The stickler.inspect report (docs/inspect-json.md) of an inspection's result.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/inspect/inspect_model.h"

namespace stickler {

nlohmann::json inspectReport(const InspectResult& result);

}  // namespace stickler
