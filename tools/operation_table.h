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

// Entries of the table, one per tool file.
Operation makeInspectModelOperation();
Operation makeCheckSupportOperation();
Operation makeRunModelOperation();
Operation makeListProfilesOperation();
Operation makeListAdaptersOperation();
Operation makeMatchAdaptersOperation();
Operation makeApplyAdapterOperation();
Operation makeRevertAdapterOperation();
Operation makeShowAppliedOperation();
Operation makeDraftAdapterOperation();
Operation makeCatalogHistoryOperation();
Operation makeSubmitForReviewOperation();
Operation makeReviewStatusOperation();
Operation makeListReviewsOperation();
Operation makeRequestChangesOperation();
Operation makeRejectProposalOperation();
Operation makeApproveProposalOperation();
Operation makeReviewBaselineOperation();
Operation makeAdaptModelOperation();
Operation makeInitWorkspaceOperation();
Operation makeStaleAdaptersOperation();
Operation makeDiagnoseModelOperation();
Operation makeRankBlockersOperation();
Operation makeLocalizeDivergenceOperation();
Operation makeGetReportOperation();
Operation makePruneReportsOperation();
Operation makeRunSweepOperation();
Operation makeMergeSweepsOperation();
Operation makeCoverageReportOperation();
Operation makeKbSearchOperation();
Operation makeKbReadOperation();
Operation makeRecordGotchaOperation();
Operation makeListGotchasOperation();
Operation makeShowGotchaOperation();

}  // namespace stickler
