#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "tools/framework/operation.h"

namespace stickler {

// Keeps one page of the array `object[key]`: entries from `offset`, at most `limit` (0: all).
// Adds `<key>_total`, and `next_<key>_offset` when more remain, so a caller can fetch the rest.
void keepPage(nlohmann::json& object, const char* key, size_t offset, size_t limit);

// The offset and limit a caller asked for in `input` (fields `<prefix>_offset` and
// `<prefix>_limit`), the limit defaulting to the context's (all on the command line).
struct PageRequest {
  size_t offset = 0;
  size_t limit = 0;
};
PageRequest pageRequest(const nlohmann::json& input, const char* prefix, OperationContext& context);

// Input-schema properties for them.
nlohmann::json pageFields(const char* prefix, const char* what);

}  // namespace stickler
