#pragma once

#include <nlohmann/json.hpp>

namespace stickler {

// Checks `value` against a JSON Schema (the subset the operation table uses: type, properties,
// required, additionalProperties, items, enum, const, minimum, maximum, exclusiveMinimum,
// minLength, minItems, maxItems) and throws UserError naming the first bad field, e.g.
// "field 'inputs[1]' must be a string, not a number".
void validateInput(const nlohmann::json& schema, const nlohmann::json& value);

}  // namespace stickler
