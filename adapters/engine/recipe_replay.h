// Making a model from its recipe in another process (a model host, a sandbox): the archive
// loaded, its hash checked, and each adapter applied again in order, as the caller applied it.
#pragma once

#include <memory>

#include "simulator/graph/model_recipe.h"

namespace stickler {

struct LoadedModel;

// Throws UserError when the archive changed since the recipe was written, or an adapter no
// longer applies. Equivalence is not checked again: the caller checked it when it applied the
// adapter, and the host verifies that the graph it made is the caller's (graph_fingerprint.h).
// Nor is adapter code sandboxed again: the caller ran the same code on the same inputs.
// With `records_from_shapes`, the model and every adapted one record what their nodes see from
// shapes alone (LoadOptions::records_from_shapes): seconds at any size, where recording from
// values is a CPU run of the model per adapter.
std::shared_ptr<const LoadedModel> modelFromRecipe(const ModelRecipe& recipe,
                                                   bool records_from_shapes = false);

}  // namespace stickler
