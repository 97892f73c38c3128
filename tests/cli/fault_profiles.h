#pragma once

#include <string>

namespace stickler::testing {

// A profile file extending spyre-2025-clean whose only fault scales `module`'s outputs by 3.
std::string wrongScaleProfile(const std::string& module);

}  // namespace stickler::testing
