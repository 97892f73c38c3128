#include "tests/unit/zoo.h"
#include "tests/build_paths.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <unistd.h>

namespace stickler::testing {

namespace {

std::string zooDir() {
  if (const char* dir = std::getenv("STICKLER_ZOO_DIR")) return dir;
  return kBuiltZooDir;
}

}  // namespace

const nlohmann::json& zooIndex() {
  static const nlohmann::json index = [] {
    std::ifstream in(zooDir() + "/index.json");
    if (!in) {
      throw std::runtime_error("no model zoo at " + zooDir() +
                               ": build the 'zoo' target (tests/zoo/generate.py)");
    }
    return nlohmann::json::parse(in);
  }();
  return index;
}

std::string zooPath(const std::string& file) {
  return zooDir() + "/" + file;
}

std::vector<std::string> zooModelNames() {
  std::vector<std::string> names;
  for (const auto& model : zooIndex().at("models")) names.push_back(model.at("name"));
  return names;
}

const nlohmann::json& zooModel(const std::string& name) {
  for (const auto& model : zooIndex().at("models")) {
    if (model.at("name") == name) return model;
  }
  throw std::runtime_error("no zoo model named " + name);
}

std::string uniqueTempPath(const std::string& name) {
  return ::testing::TempDir() + std::to_string(::getpid()) + "-" + name;
}

std::string testName(std::string name) {
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace stickler::testing
