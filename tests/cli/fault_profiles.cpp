#include "tests/cli/fault_profiles.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

namespace stickler::testing {

std::string wrongScaleProfile(const std::string& module, const std::string& extends) {
  return scaledModulesProfile({module}, 3.0, extends);
}

std::string scaledModulesProfile(const std::vector<std::string>& modules, double factor,
                                 const std::string& extends) {
  std::string name = extends;
  nlohmann::json faults = nlohmann::json::array();
  for (const std::string& module : modules) {
    name += "-" + module;
    faults.push_back({{"id", "wrong-scale-" + std::to_string(faults.size() + 1)},
                      {"match", {{"module", module}}},
                      {"effect", {{"kind", "wrong_scale"}, {"factor", factor}}}});
  }
  for (char& c : name) {
    if (c == '*' || c == '?' || c == '/') c = '_';
  }
  const std::string path =
      ::testing::TempDir() + "fault-" + name + "-x" + std::to_string(factor) + ".json";
  const nlohmann::json profile = {
      {"version", 1},
      {"extends", extends},
      {"name", "test-wrong-scale"},
      {"description", "Test profile: some modules' outputs come out too large."},
      {"faults", faults}};
  std::ofstream(path) << profile.dump(2);
  return path;
}

std::string scaledOperatorProfile(const std::string& op, const std::string& module) {
  const std::string path =
      ::testing::TempDir() + "fault-" + op.substr(op.find(':') + 2) + "-" + module + "-x3.json";
  const nlohmann::json profile = {
      {"version", 1},
      {"extends", "spyre-2025-clean"},
      {"name", "test-operator-scale"},
      {"description", "Test profile: one operator of one module comes out 3 times too large."},
      {"faults",
       {{{"id", "operator-scale"},
         {"match", {{"op", op}, {"module", module}}},
         {"effect", {{"kind", "wrong_scale"}, {"factor", 3.0}}}}}}};
  std::ofstream(path) << profile.dump(2);
  return path;
}

}  // namespace stickler::testing
