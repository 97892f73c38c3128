// Saving an adapted model as a TorchScript archive that `stickler run` (or torch.jit.load)
// runs like any other: the adapted graph becomes the forward, with the model card and the list
// of adapters as extra files.
#pragma once

#include <string>
#include <vector>

namespace stickler {

struct LoadedModel;

// Writes `model` to `out_path`. Weights are stored as the forward's constants (as
// torch.jit.freeze does), so the archive needs nothing from the adapters to run; the module
// hierarchy stays for inspection, but node module paths are not kept by TorchScript's format.
// Throws UserError when `model` cannot be saved faithfully (it places modules on the host):
// callers check before doing work whose result they mean to save.
void requireSavable(const LoadedModel& model);

void saveAdaptedArchive(const LoadedModel& model, const std::vector<std::string>& adapters,
                        const std::string& out_path);

}  // namespace stickler
