#include "simulator/graph/model_recipe.h"

#include "simulator/support/errors.h"
#include "simulator/support/sha256.h"

namespace stickler {

using nlohmann::json;

namespace {

// Every field, exactly: a recipe is read back by the same binary, never written by hand.
json inputToJson(const InputSpec& input) {
  json entry{{"name", input.name},
             {"shape", input.shape},
             {"dtype", static_cast<int>(input.dtype)},
             {"kind", static_cast<int>(input.kind)},
             {"low", input.low},
             {"high", input.high}};
  if (input.vocab_size) entry["vocab_size"] = *input.vocab_size;
  return entry;
}

InputSpec inputFromJson(const json& entry) {
  InputSpec input;
  input.name = entry.at("name").get<std::string>();
  input.shape = entry.at("shape").get<std::vector<int64_t>>();
  input.dtype = static_cast<DType>(entry.at("dtype").get<int>());
  input.kind = static_cast<InputKind>(entry.at("kind").get<int>());
  input.low = entry.at("low").get<double>();
  input.high = entry.at("high").get<double>();
  if (entry.contains("vocab_size")) input.vocab_size = entry["vocab_size"].get<int64_t>();
  return input;
}

}  // namespace

json ModelRecipe::toJson() const {
  json inputs_json = json::array();
  for (const InputSpec& input : inputs) inputs_json.push_back(inputToJson(input));
  json steps_json = json::array();
  for (const RecipeStep& step : steps) {
    steps_json.push_back({{"adapter", step.adapter},
                          {"path", step.path},
                          {"source", step.source},
                          {"reviewed", step.reviewed},
                          {"profile", step.profile}});
  }
  return {{"archive", archive},
          {"sha256", sha256},
          {"inputs", inputs_json},
          {"seed", seed},
          {"graph", static_cast<int>(graph)},
          {"steps", steps_json}};
}

ModelRecipe ModelRecipe::fromJson(const json& doc) {
  try {
    ModelRecipe recipe;
    recipe.archive = doc.at("archive").get<std::string>();
    recipe.sha256 = doc.at("sha256").get<std::string>();
    for (const json& input : doc.at("inputs")) recipe.inputs.push_back(inputFromJson(input));
    recipe.seed = doc.at("seed").get<uint64_t>();
    const int graph = doc.at("graph").get<int>();
    if (graph < 0 || graph > static_cast<int>(ModelGraph::kDecodeStep)) {
      throw UserError("a malformed model recipe: graph " + std::to_string(graph));
    }
    recipe.graph = static_cast<ModelGraph>(graph);
    for (const json& step : doc.at("steps")) {
      recipe.steps.push_back({step.at("adapter").get<std::string>(),
                              step.at("path").get<std::string>(),
                              step.at("source").get<std::string>(), step.at("reviewed").get<bool>(),
                              step.at("profile").get<std::string>()});
    }
    return recipe;
  } catch (const json::exception& e) {
    throw UserError(std::string("a malformed model recipe: ") + e.what());
  }
}

std::string ModelRecipe::key() const {
  return sha256Bytes(toJson().dump());
}

}  // namespace stickler
