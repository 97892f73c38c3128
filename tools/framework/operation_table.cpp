#include "tools/framework/operation_table.h"

#include <filesystem>

#include <stdexcept>

#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "tools/framework/input_validation.h"

namespace stickler {

std::string OperationContext::resolveOutputPath(const std::string& path) {
  const std::string resolved = resolvePath(path);
  const std::filesystem::path parent = std::filesystem::path(resolved).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) throw UserError("cannot create " + parent.string() + ": " + ec.message());
  }
  return resolved;
}

const std::vector<Operation>& operationTable() {
  // Each feature's folder registers its own, in the order front-ends list them.
  static const std::vector<Operation> table = [] {
    std::vector<Operation> operations;
    addModelOperations(operations);
    addAdapterOperations(operations);
    addReviewOperations(operations);
    addDiagnoseOperations(operations);
    addReportOperations(operations);
    addSweepOperations(operations);
    addKnowledgeOperations(operations);
    return operations;
  }();
  return table;
}

const Operation* findOperation(std::string_view name) {
  for (const auto& operation : operationTable()) {
    if (operation.name == name || operation.cli.command == name) return &operation;
  }
  return nullptr;
}

const Operation& operationNamed(std::string_view name) {
  if (const Operation* operation = findOperation(name)) return *operation;
  throw std::logic_error("no operation named " + std::string(name) + " in the table");
}

nlohmann::json runOperation(const Operation& operation, const nlohmann::json& input,
                            OperationContext& context) {
  validateInput(operation.input_schema, input);
  nlohmann::json completed = input;
  for (const auto& [name, property] : operation.input_schema["properties"].items()) {
    if (!completed.contains(name) && property.contains("default")) {
      completed[name] = property["default"];
    }
  }
  // User code run in this process (a model's example run, an adapter's replacement) gets the
  // call's device-run timeout as its budget per run, and stops when the call is cancelled.
  const double seconds = completed.contains("timeout_seconds")
                             ? completed["timeout_seconds"].get<double>()
                             : defaultExecutionSeconds();
  const ExecutionLimitScope limit({seconds, context.task().cancelled});
  return operation.run(completed, context);
}

std::string requireString(const nlohmann::json& input, const char* field) {
  if (!input.contains(field))
    throw UserError(std::string("missing required field '") + field + "'");
  if (!input[field].is_string())
    throw UserError(std::string("field '") + field + "' must be a string");
  return input[field];
}

std::vector<std::string> optionalStrings(const nlohmann::json& input, const char* field) {
  std::vector<std::string> values;
  if (!input.contains(field)) return values;
  if (!input[field].is_array()) {
    throw UserError(std::string("field '") + field + "' must be an array of strings");
  }
  for (const auto& item : input[field]) {
    if (!item.is_string()) {
      throw UserError(std::string("field '") + field + "' must be an array of strings");
    }
    values.push_back(item);
  }
  return values;
}

bool optionalBool(const nlohmann::json& input, const char* field, bool fallback) {
  if (!input.contains(field)) return fallback;
  if (!input[field].is_boolean())
    throw UserError(std::string("field '") + field + "' must be a boolean");
  return input[field];
}

std::string resolveProfile(const std::string& name_or_path, OperationContext& context) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  return is_path ? context.resolvePath(name_or_path) : name_or_path;
}

std::string resolveBackend(const std::string& spec, OperationContext& context) {
  const std::string prefix = "spyre-sim:";
  if (spec.rfind(prefix, 0) != 0) return spec;
  return prefix + resolveProfile(spec.substr(prefix.size()), context);
}

double optionalNumber(const nlohmann::json& input, const char* field, double fallback) {
  if (!input.contains(field)) return fallback;
  if (!input[field].is_number())
    throw UserError(std::string("field '") + field + "' must be a number");
  return input[field];
}

}  // namespace stickler
