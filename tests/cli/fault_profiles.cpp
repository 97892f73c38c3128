#include "tests/cli/fault_profiles.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

namespace stickler::testing {

std::string wrongScaleProfile(const std::string& module, const std::string& extends) {
  const std::string path = ::testing::TempDir() + "fault-" + extends + "-" + module + ".json";
  const nlohmann::json profile = {
      {"version", 1},
      {"extends", extends},
      {"name", "test-wrong-scale"},
      {"description", "Test profile: one module's outputs come out three times too large."},
      {"faults",
       {{{"id", "wrong-scale"},
         {"match", {{"module", module}}},
         {"effect", {{"kind", "wrong_scale"}, {"factor", 3.0}}}}}}};
  std::ofstream(path) << profile.dump(2);
  return path;
}

}  // namespace stickler::testing
