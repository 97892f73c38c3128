// Adapters and counts the adapter engine's tests share.
#pragma once

#include <string>

#include "adapters/engine/adapter_file.h"

namespace stickler {
struct LoadedModel;
}

namespace stickler::testing {

// A rewrite adapter, `name`.py, for spyre-2026 and every model, whose functions are `functions`
// (a pattern and a replacement, a condition or helpers as the file would hold them).
AdapterFile rewriteFor(const std::string& name, const std::string& functions);

// How many nodes of `op` ("aten::arange") the model's graph holds, nested blocks included.
int countOps(const LoadedModel& model, const std::string& op);

}  // namespace stickler::testing
