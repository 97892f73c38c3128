#pragma once

#include <string>

namespace stickler::testing {

// A profile file extending `extends` whose only fault scales `module`'s outputs by 3.
std::string wrongScaleProfile(const std::string& module,
                              const std::string& extends = "spyre-2025-clean");

}  // namespace stickler::testing
