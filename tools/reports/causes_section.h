// The causes of a localize report on its HTML page: every cause in the order found, with its
// modules, the runs that confirm it (alone, without each member, everything else on the device)
// and the runs it took; then the run budget, and what it left undecided when it ran out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

// "" for a report without causes (diagnose, a localization that passes or is blocked).
std::string causesSection(const nlohmann::json& report);

}  // namespace stickler
