#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

// The lowering report (the "lowering" of check_support, the "compile" of run_model) for
// people: blockers with where they are and why, CPU fallbacks with their cost, kernels.
std::string renderLoweringText(const nlohmann::json& lowering);

}  // namespace stickler
