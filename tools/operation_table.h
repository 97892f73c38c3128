#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/operation.h"

namespace stickler {

// Every operation Stickler offers, in the order front-ends list them.
const std::vector<Operation>& operationTable();

// The operation with this MCP name or CLI command, or nullptr.
const Operation* findOperation(std::string_view name);

// Helpers for handlers: read a field of the input, or throw a UserError naming it.
std::string requireString(const nlohmann::json& input, const char* field);
std::vector<std::string> optionalStrings(const nlohmann::json& input, const char* field);
bool optionalBool(const nlohmann::json& input, const char* field, bool fallback);
double optionalNumber(const nlohmann::json& input, const char* field, double fallback);

// Entries of the table, one per tool file.
Operation makeInspectModelOperation();
Operation makeCheckSupportOperation();
Operation makeRunModelOperation();

}  // namespace stickler
