#include "tests/unit/synthetic_models.h"
#include "tests/build_paths.h"

#include <gtest/gtest.h>
#include <torch/script.h>

namespace stickler::testing {

std::string writeScriptedModel(const std::string& name, const std::string& forward_source,
                               const std::string& card_json) {
  torch::jit::Module module(name);
  module.define(forward_source);
  const std::string path = ::testing::TempDir() + "/" + name + ".pt";
  torch::jit::ExtraFilesMap extra{{"stickler/model.json", card_json}};
  module.save(path, extra);
  return path;
}

std::string testProfile(const std::string& file) {
  return std::string(kTestProfiles) + "/" + file;
}

}  // namespace stickler::testing
