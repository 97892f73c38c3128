// What a report says in one line, whatever its kind: the model, what it ran on, the status and
// whether that is a pass. The HTML page, the JUnit document and the report list all lead with it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

struct ReportOutcome {
  std::string kind;     // reportKind(): diagnose-compile, diagnose-run, localize, ...
  std::string model;    // the model's name
  std::string target;   // the profile or backend it was diagnosed on
  std::string status;   // the report's status or verdict
  bool passed = false;  // the model compiles / passes end to end
  std::string summary;  // one or two sentences for people
};

ReportOutcome reportOutcome(const nlohmann::json& report);

// object[key] when it is a string, else "" (reports are read defensively: a saved file may
// have been edited by hand).
std::string stringField(const nlohmann::json& object, const char* key);

// object[key] as decimal text when it is an integer, else "?".
std::string integerField(const nlohmann::json& object, const char* key);

}  // namespace stickler
