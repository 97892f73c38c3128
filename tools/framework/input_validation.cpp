#include "tools/framework/input_validation.h"

#include <string>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string typeOf(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "something else";
  }
}

bool hasType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() &&
            value.get<double>() == static_cast<int64_t>(value.get<double>()));
  }
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  if (type == "null") return value.is_null();
  return true;
}

std::string article(const std::string& type) {
  return (type == "array" || type == "object" || type == "integer" ? "an " : "a ") + type;
}

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  if (where.empty()) throw UserError("the arguments " + problem);
  throw UserError("field '" + where + "' " + problem);
}

void check(const json& schema, const json& value, const std::string& where) {
  if (!schema.is_object()) return;
  if (schema.contains("type")) {
    const json& type = schema["type"];
    bool matches = false;
    std::string expected;
    if (type.is_string()) {
      matches = hasType(value, type);
      expected = article(type);
    } else if (type.is_array()) {
      for (const auto& option : type) {
        matches = matches || hasType(value, option);
        expected += (expected.empty() ? "" : " or ") + article(option);
      }
    }
    if (!matches) fail(where, "must be " + expected + ", not " + typeOf(value));
  }
  if (schema.contains("const") && value != schema["const"]) {
    fail(where, "must be " + schema["const"].dump());
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& option : schema["enum"]) found = found || option == value;
    if (!found) fail(where, "must be one of " + schema["enum"].dump() + ", not " + value.dump());
  }
  if (value.is_number()) {
    const double number = value.get<double>();
    if (schema.contains("minimum") && number < schema["minimum"].get<double>()) {
      fail(where, "must be at least " + schema["minimum"].dump());
    }
    if (schema.contains("exclusiveMinimum") && number <= schema["exclusiveMinimum"].get<double>()) {
      fail(where, "must be greater than " + schema["exclusiveMinimum"].dump());
    }
    if (schema.contains("maximum") && number > schema["maximum"].get<double>()) {
      fail(where, "must be at most " + schema["maximum"].dump());
    }
  }
  if (value.is_string() && schema.contains("minLength") &&
      value.get<std::string>().size() < schema["minLength"].get<size_t>()) {
    fail(where, "must have at least " + schema["minLength"].dump() + " characters");
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
      fail(where, "must have at least " + schema["minItems"].dump() + " items");
    }
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
      fail(where, "must have at most " + schema["maxItems"].dump() + " items");
    }
    if (schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        check(schema["items"], value[i], where + "[" + std::to_string(i) + "]");
      }
    }
  }
  if (value.is_object()) {
    const json properties = schema.value("properties", json::object());
    for (const auto& name : schema.value("required", json::array())) {
      if (!value.contains(name.get<std::string>())) {
        const std::string field =
            where.empty() ? name.get<std::string>() : where + "." + name.get<std::string>();
        throw UserError("missing required field '" + field + "'");
      }
    }
    for (const auto& [name, item] : value.items()) {
      const std::string field = where.empty() ? name : where + "." + name;
      if (properties.contains(name)) {
        check(properties[name], item, field);
      } else if (schema.contains("additionalProperties")) {
        const json& additional = schema["additionalProperties"];
        if (additional.is_boolean() && !additional.get<bool>()) {
          std::string known;
          for (const auto& [key, unused] : properties.items())
            known += (known.empty() ? "" : ", ") + key;
          throw UserError("unknown field '" + field + "' (expected " + known + ")");
        }
        check(additional, item, field);
      }
    }
  }
}

}  // namespace

void validateInput(const json& schema, const json& value) {
  check(schema, value, "");
}

}  // namespace stickler
