#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/framework/operation.h"

namespace stickler {

// Every operation Stickler offers, in the order front-ends list them.
const std::vector<Operation>& operationTable();

// The operation with this MCP name or CLI command, or nullptr.
const Operation* findOperation(std::string_view name);
// The same for an operation that must exist (one tool calling another): std::logic_error, an
// internal error, when it does not.
const Operation& operationNamed(std::string_view name);

// The one way an operation runs, from either front-end or from another operation: the input
// checked against the operation's input schema (a UserError naming the first bad field), the
// schema's defaults filled in for properties not given, then the handler. Handlers thus see
// every defaulted property and need not repeat its default.
nlohmann::json runOperation(const Operation& operation, const nlohmann::json& input,
                            OperationContext& context);

// Helpers for handlers: read a field of the input, or throw a UserError naming it.
std::string requireString(const nlohmann::json& input, const char* field);
std::vector<std::string> optionalStrings(const nlohmann::json& input, const char* field);
bool optionalBool(const nlohmann::json& input, const char* field, bool fallback);
double optionalNumber(const nlohmann::json& input, const char* field, double fallback);

// A device profile named by the caller: a shipped name as is, a path resolved by the context.
std::string resolveProfile(const std::string& name_or_path, OperationContext& context);
// A backend spec whose spyre-sim profile is a path gets that path resolved by the context.
std::string resolveBackend(const std::string& spec, OperationContext& context);

// Each feature's operations, registered by its folder (tools/<feature>/<feature>_operations.cpp),
// one file per operation beside it, named as the command a user types.
void addModelOperations(std::vector<Operation>& table);      // inspect, check, run, profiles
void addAdapterOperations(std::vector<Operation>& table);    // adapters, match, apply, adapt, ...
void addReviewOperations(std::vector<Operation>& table);     // review submit, show, approve, ...
void addDiagnoseOperations(std::vector<Operation>& table);   // diagnose, blockers, localize
void addReportOperations(std::vector<Operation>& table);     // report, report prune
void addSweepOperations(std::vector<Operation>& table);      // sweep, sweep merge, sweep report
void addKnowledgeOperations(std::vector<Operation>& table);  // kb search, kb read, gotchas ...

}  // namespace stickler
