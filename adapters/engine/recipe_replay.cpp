#include "adapters/engine/recipe_replay.h"

#include <map>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_file.h"
#include "adapters/engine/adapter_sandbox.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"

namespace stickler {

std::shared_ptr<const LoadedModel> modelFromRecipe(const ModelRecipe& recipe,
                                                   bool records_from_shapes) {
  // The caller ran every adapter's code already, on these same inputs (sandboxed where it had
  // to be): replaying it needs no sandbox of its own.
  const AdapterCodeRunsHere here;
  LoadOptions options;
  options.inputs = recipe.inputs;
  options.seed = recipe.seed;
  options.graph = recipe.graph;
  options.records_from_shapes = records_from_shapes;
  std::shared_ptr<const LoadedModel> model = loadModel(recipe.archive, options);
  if (model->sha256 != recipe.sha256) {
    throw UserError(recipe.archive + ": the archive changed since the model was loaded (sha256 " +
                    model->sha256.substr(0, 12) + ", was " + recipe.sha256.substr(0, 12) + ")");
  }
  std::map<std::string, DeviceProfile> profiles;
  for (const RecipeStep& step : recipe.steps) {
    AdapterFile adapter = parseAdapterFile(step.source, step.path);
    adapter.reviewed = step.reviewed;
    auto profile = profiles.find(step.profile);
    if (profile == profiles.end()) {
      profile = profiles.emplace(step.profile, loadProfile(step.profile)).first;
    }
    AdapterApplication application =
        applyAdapter(adapter, model, profile->second, /*check_equivalence=*/false);
    if (!application.changed()) {
      throw UserError("making the model again: " + step.adapter +
                      " changed nothing this time, though it did when it was applied");
    }
    model = application.after;
  }
  return model;
}

}  // namespace stickler
