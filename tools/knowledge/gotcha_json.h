#pragma once

#include <nlohmann/json.hpp>

#include "knowledge/gotcha_store.h"

namespace stickler {

class OperationContext;

// A gotcha as the gotcha tools return it.
nlohmann::json gotchaToJson(const Gotcha& gotcha);

// The store of the caller's workspace.
GotchaStore gotchaStore(OperationContext& context);

}  // namespace stickler
