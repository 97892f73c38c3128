// Saving an adapted model as a TorchScript archive that `stickler run` (or torch.jit.load)
// runs like any other: the adapted graph becomes the forward, with the model card and the list
// of adapters as extra files.
#pragma once

#include <string>
#include <vector>

namespace stickler {

struct LoadedModel;

// Writes `model` to `out_path`: the adapted graph as the forward of the archive's own module
// tree. Weights the adapters left alone stay the module's parameters (stored once, tied weights
// tied); weights they changed or added are the forward's constants (as torch.jit.freeze makes
// them), so the archive needs nothing from the adapters to run. Each node's module call, which
// TorchScript's format does not keep, travels in stickler/module_paths.json and is restored on
// load, so reports on the saved archive name the same modules.
// Throws UserError when `model` cannot be saved faithfully (it places modules on the host):
// callers check before doing work whose result they mean to save.
void requireSavable(const LoadedModel& model);

void saveAdaptedArchive(const LoadedModel& model, const std::vector<std::string>& adapters,
                        const std::string& out_path);

}  // namespace stickler
