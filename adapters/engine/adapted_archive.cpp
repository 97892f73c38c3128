#include "adapters/engine/adapted_archive.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>

#include "simulator/graph/attribute_constants.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

}  // namespace

void requireSavable(const LoadedModel& model) {
  if (!model.host_modules.empty()) {
    throw UserError("cannot save the adapted model: it places modules on the host (" +
                    model.host_modules.front() +
                    ", ...), and a TorchScript archive does not keep the module paths of its "
                    "nodes, so the placement would be lost");
  }
  if (countPlacedOnHost(*model.graph) > 0) {
    throw UserError(
        "cannot save the adapted model: it places operators on the host (built masks), and a "
        "TorchScript archive does not keep that placement, so it would be lost");
  }
}

void saveAdaptedArchive(const LoadedModel& model, const std::vector<std::string>& adapters,
                        const std::string& out_path) {
  requireSavable(model);
  torch::NoGradGuard no_grad;
  // A module of its own, with types of its own, whose forward can be replaced.
  torch::jit::Module saved = torch::jit::load(model.path, torch::kCPU);
  auto graph = model.graph->copy();
  attributesToConstants(*graph, c10::IValue(model.module._ivalue()));
  if (graph->inputs().at(0)->hasUses()) {
    throw UserError(
        "cannot save the adapted model: its forward still reads module objects "
        "that TorchScript cannot store as constants");
  }
  graph->inputs().at(0)->setType(saved.type());
  const c10::QualifiedName forward_name(*saved.type()->name(), "forward");
  saved.type()->unsafeRemoveMethod("forward");
  auto unit = saved._ivalue()->compilation_unit();
  unit->unsafeRemoveMethod(forward_name);
  torch::jit::Function* forward = unit->create_function(forward_name, graph);
  saved.type()->addMethod(forward);

  nlohmann::json card = modelCardToJson(model.card);
  torch::jit::ExtraFilesMap extra = {
      {ModelCard::kArchivePath, card.dump(2)},
      {"stickler/adapters.json",
       nlohmann::json{{"adapters", adapters}, {"identity", model.sha256}}.dump(2)}};
  if (std::any_of(model.captured_inputs.begin(), model.captured_inputs.end(),
                  [](const at::Tensor& tensor) { return tensor.defined(); })) {
    // A repro's captured inputs travel with it: None for the inputs drawn from the card.
    std::vector<c10::IValue> stored;
    for (const at::Tensor& tensor : model.captured_inputs) {
      stored.push_back(tensor.defined() ? c10::IValue(tensor) : c10::IValue());
    }
    const auto bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(stored));
    extra[ModelCard::kCapturedInputsPath] = std::string(bytes.begin(), bytes.end());
  }
  try {
    saved.save(out_path, extra);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw UserError(out_path + ": cannot write the archive: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace stickler
