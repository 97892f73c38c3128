// Pieces of the text diagnose and localize print for people, shared so both read alike.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

// A metric: three significant digits, "-" when there is none (null: not finite).
std::string metricText(const nlohmann::json& value);

// "<model> on <backend>: <status>\n<summary>\n".
std::string headlineText(const nlohmann::json& report);

// One line per deviation onset (absorbed or not): module, class, error, threshold, ratio, and
// how many modules after it carry it.
std::string deviationLines(const nlohmann::json& onsets);

}  // namespace stickler
