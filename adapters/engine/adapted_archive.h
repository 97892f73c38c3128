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
// The same check as a reason: "" when `model` can be saved.
std::string whyNotSavable(const LoadedModel& model);

// The graphs of the model's decode interface with the adapters they took (adapt --decode):
// saved as the archive's prefill and step methods, in place of the original ones, so the saved
// card keeps its decode interface. Without them the saved card has none: the archive's own
// prefill and step would run the model as it was before its adapters.
struct DecodeGraphsToSave {
  const LoadedModel* prefill = nullptr;
  const LoadedModel* step = nullptr;
  std::vector<std::string> prefill_adapters;
  std::vector<std::string> step_adapters;
};

void saveAdaptedArchive(const LoadedModel& model, const std::vector<std::string>& adapters,
                        const std::string& out_path, const DecodeGraphsToSave* decode = nullptr);

}  // namespace stickler
