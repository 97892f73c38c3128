// Device runs in model hosts: the jobs a host serves for a model (made once from its recipe),
// and how a device backend gives them one. LibTorch-free, so that tools/ can register the jobs.
#pragma once

#include <functional>
#include <memory>

#include "simulator/graph/model_recipe.h"

namespace stickler {

struct LoadedModel;

// Makes the model of a recipe in this process (adapters/engine/recipe_replay.h: the archive
// loaded, the adapters applied again).
using ModelMaker = std::function<std::shared_ptr<const LoadedModel>(const ModelRecipe&)>;

// Registers the model host's jobs: "host_load" (make the recipe's model and keep it) and
// "device_run" (a compiled device run of the kept model on given inputs, which an abort of the
// device ends together with the host).
void registerDeviceRunJobs(ModelMaker maker);

}  // namespace stickler
