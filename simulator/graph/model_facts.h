// What the tools layer reads of a loaded model, without LibTorch: a LoadedModel is opaque
// outside the simulator (its header includes <torch/script.h>), and these are its plain parts.
#pragma once

#include <string>
#include <vector>

#include "simulator/graph/model_card.h"
#include "simulator/graph/model_identity.h"
#include "simulator/graph/module_table.h"

namespace stickler {

struct LoadedModel;

ModelIdentity identityOf(const LoadedModel& model);
const ModelCard& cardOf(const LoadedModel& model);
const ModuleTable& modulesOf(const LoadedModel& model);
// Modules an adapter placed on the host.
const std::vector<std::string>& hostModulesOf(const LoadedModel& model);
// What makes the model again (the archive's hash, its inputs, the adapters applied), as one
// string: equal for equal recipes (model_recipe.h).
std::string recipeKeyOf(const LoadedModel& model);
// Parameters with tied weights counted once.
int64_t uniqueParametersOf(const LoadedModel& model);

}  // namespace stickler
