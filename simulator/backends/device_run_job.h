// Device runs in model hosts: the jobs a host serves for a model (made once from its recipe),
// and how a device backend gives them one. LibTorch-free, so that tools/ can register the jobs.
#pragma once

#include <functional>
#include <memory>

#include "simulator/graph/model_recipe.h"

namespace stickler {

struct LoadedModel;

// Makes the model of a recipe in this process (adapters/engine/recipe_replay.h: the archive
// loaded, the adapters applied again), recording what each node sees from shapes alone when
// asked (LoadOptions::records_from_shapes) or from values.
using ModelMaker =
    std::function<std::shared_ptr<const LoadedModel>(const ModelRecipe&, bool records_from_shapes)>;

// A model host's model, made from its recipe.
struct HostModel {
  std::shared_ptr<const LoadedModel> model;
  bool recorded_from_shapes = false;
};

// Records from shapes alone when the caller's records (`caller_records`, their
// recordsFingerprint; empty: record from values) are what shapes say too: a host lowers and
// runs the model, and recording from values costs a CPU run of the model per adapter (a minute
// of an 8B model's making). Where shapes say something else than values did (a scalar read from
// a weight, routing that depends on the data), the model is made again recording from values,
// so that the host lowers it as its caller does.
HostModel makeHostModel(const ModelMaker& maker, const ModelRecipe& recipe,
                        const std::string& caller_records);

// Registers the model host's jobs: "host_load" (make the recipe's model with makeHostModel and
// keep it) and "device_run" (a compiled device run of the kept model on given inputs, which an
// abort of the device ends together with the host).
void registerDeviceRunJobs(ModelMaker maker);

}  // namespace stickler
