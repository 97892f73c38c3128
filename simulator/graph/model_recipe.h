// How to make a model again in another process (a model host): the archive it was loaded from
// with its hash, how its example inputs were drawn, and the adapters applied to it, in order,
// each with its source text and the profile it was applied for. A job names its model by
// recipe; the host makes the model from it once and serves every run of it (docs/architecture.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/graph/model_card.h"

namespace stickler {

struct RecipeStep {
  std::string adapter;  // its name
  std::string path;     // where its file was read from, for messages
  std::string source;   // the file's text
  bool reviewed = false;
  std::string profile;  // the path of the profile it was applied for
};

struct ModelRecipe {
  std::string archive;            // an absolute path
  std::string sha256;             // of the archive's bytes
  std::vector<InputSpec> inputs;  // --input specs (empty: the card's)
  uint64_t seed = 0;
  ModelGraph graph = ModelGraph::kForward;  // the forward, or a graph of the decode interface
  std::vector<RecipeStep> steps;

  nlohmann::json toJson() const;
  // Throws UserError on a malformed recipe.
  static ModelRecipe fromJson(const nlohmann::json& json);
  // The same for equal recipes, different for any difference: a model host's key.
  std::string key() const;
};

}  // namespace stickler
