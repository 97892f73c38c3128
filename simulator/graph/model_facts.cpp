#include "simulator/graph/model_facts.h"

#include "simulator/graph/loaded_model.h"

namespace stickler {

ModelIdentity identityOf(const LoadedModel& model) {
  return model.identity();
}

std::string recipeKeyOf(const LoadedModel& model) {
  return model.recipe.key();
}

const ModelCard& cardOf(const LoadedModel& model) {
  return model.card;
}

const ModuleTable& modulesOf(const LoadedModel& model) {
  return model.modules;
}

const std::vector<std::string>& hostModulesOf(const LoadedModel& model) {
  return model.host_modules;
}

int64_t uniqueParametersOf(const LoadedModel& model) {
  return model.unique_parameters;
}

}  // namespace stickler
