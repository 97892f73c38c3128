// A report as JUnit XML for CI systems: one test suite per report, a test case for the
// end-to-end verdict and one per compile blocker, each failure carrying the message a person
// needs (the culprit, the rule, the repro command).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

std::string renderJunitReport(const nlohmann::json& report);

}  // namespace stickler
