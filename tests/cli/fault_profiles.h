#pragma once

#include <string>
#include <vector>

namespace stickler::testing {

// A profile file extending `extends` whose only fault scales `module`'s outputs by 3.
std::string wrongScaleProfile(const std::string& module,
                              const std::string& extends = "spyre-2025-clean");

// A profile file extending `extends` with one fault per entry of `modules` (a module path or a
// glob over them), each scaling its outputs by `factor`.
std::string scaledModulesProfile(const std::vector<std::string>& modules, double factor,
                                 const std::string& extends = "spyre-2025-clean");

// A profile file extending spyre-2025-clean whose only fault scales the results of `op` (say
// aten::softmax) in `module` by 3.
std::string scaledOperatorProfile(const std::string& op, const std::string& module);

}  // namespace stickler::testing
