#include "adapters/engine/adapted_archive.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/mapped_archive.h"
#include "simulator/graph/model_archive.h"
#include "simulator/lowering/host_placement.h"
#include "simulator/support/errors.h"
#include "simulator/support/sha256.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

bool sameAttribute(const c10::IValue& adapted, const c10::IValue& saved) {
  if (adapted.isObject() || saved.isObject()) {
    return adapted.isObject() && saved.isObject() && adapted.type()->str() == saved.type()->str();
  }
  if (adapted.isTensor() || saved.isTensor()) {
    if (!adapted.isTensor() || !saved.isTensor()) return false;
    const at::Tensor& a = adapted.toTensor();
    const at::Tensor& b = saved.toTensor();
    return a.is_same(b) ||
           (a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(a, b));
  }
  return adapted == saved;
}

// The forward's weight reads made to read `saved` (the archive loaded afresh, whose types the
// saved forward must use): a read of an attribute that `saved` holds unchanged keeps reading it,
// so each weight is stored once (tied weights once for both ties, as the archive had them); a
// weight an adapter changed or added becomes a constant of the forward, as torch.jit.freeze
// makes them. UserError when the forward reads a module object it cannot keep.
void readWeightsFromSavedModule(torch::jit::Graph& graph, const c10::IValue& adapted_self,
                                const torch::jit::Module& saved) {
  Value* self = graph.inputs().at(0);
  std::unordered_map<const Value*, c10::IValue> in_saved{{self, c10::IValue(saved._ivalue())}};
  std::vector<Node*> reads;
  for (const Node* node : allNodes(graph)) {
    if (node->kind() == prim::GetAttr) reads.push_back(const_cast<Node*>(node));
  }
  for (Node* read : reads) {
    const auto adapted = resolveAttribute(read->output(), self, adapted_self);
    std::optional<c10::IValue> kept;
    auto owner = in_saved.find(read->input());
    const std::string& name = read->s(torch::jit::attr::name);
    if (owner != in_saved.end() && owner->second.isObject() &&
        owner->second.toObject()->type()->hasAttribute(name)) {
      kept = owner->second.toObject()->getAttr(name);
    }
    if (adapted && kept && sameAttribute(*adapted, *kept)) {
      read->output()->setType(kept->type());
      in_saved[read->output()] = *kept;
      continue;
    }
    if (!adapted || adapted->isObject()) continue;  // refused below, if anything reads it
    c10::IValue value = *adapted;
    if (value.isTensor()) value = c10::IValue(value.toTensor().detach());
    torch::jit::WithInsertPoint insert_point(read);
    auto constant = torch::jit::tryInsertConstant(graph, value);
    if (!constant) continue;
    read->output()->replaceAllUsesWith(*constant);
  }
  torch::jit::EliminateDeadCode(graph.block());
  for (const Node* node : allNodes(graph)) {
    if (node->kind() == prim::GetAttr && !in_saved.count(node->output())) {
      throw UserError(
          "cannot save the adapted model: its forward reads module objects that the archive "
          "does not hold and TorchScript cannot store as constants");
    }
  }
}

// Each node's module call, which TorchScript's format does not keep: the nodes of the saved
// forward in order, with the scope (module call) each lies in, and the scopes as a tree.
nlohmann::json modulePathsOf(const torch::jit::Graph& graph) {
  std::unordered_map<const torch::jit::Scope*, int64_t> ids;
  nlohmann::json scopes = nlohmann::json::array();
  std::function<int64_t(const torch::jit::ScopePtr&)> idOf =
      [&](const torch::jit::ScopePtr& scope) -> int64_t {
    if (!scope || scope->isRoot()) return -1;
    auto found = ids.find(scope.get());
    if (found != ids.end()) return found->second;
    const int64_t parent = idOf(scope->parent());
    const auto id = static_cast<int64_t>(scopes.size());
    scopes.push_back({scope->name().toUnqualString(), parent});
    ids[scope.get()] = id;
    return id;
  };
  nlohmann::json nodes = nlohmann::json::array();
  for (const Node* node : allNodes(graph)) {
    if (node->kind() == prim::Constant) continue;
    nodes.push_back({node->kind().toQualString(), idOf(const_cast<Node*>(node)->scope())});
  }
  return {{"version", 1}, {"scopes", scopes}, {"nodes", nodes}};
}

// `method` of `saved` replaced by `model`'s graph, reading `saved`'s weights where the adapters
// left them alone. Returns the graph as saved, for its record of module paths.
std::shared_ptr<torch::jit::Graph> replaceMethod(torch::jit::Module& saved,
                                                 const std::string& method,
                                                 const LoadedModel& model) {
  auto graph = model.graph->copy();
  readWeightsFromSavedModule(*graph, c10::IValue(model.module._ivalue()), saved);
  graph->inputs().at(0)->setType(saved.type());
  const c10::QualifiedName name(*saved.type()->name(), method);
  saved.type()->unsafeRemoveMethod(method);
  auto unit = saved._ivalue()->compilation_unit();
  unit->unsafeRemoveMethod(name);
  saved.type()->addMethod(unit->create_function(name, graph));
  return graph;
}

}  // namespace

std::string whyNotSavable(const LoadedModel& model) {
  if (!model.host_modules.empty()) {
    return "it places modules on the host (" + model.host_modules.front() +
           ", ...), and a TorchScript archive does not keep the module paths of its nodes, so "
           "the placement would be lost";
  }
  if (countPlacedOnHost(*model.graph) > 0) {
    return "it places operators on the host (built masks), and a TorchScript archive does not "
           "keep that placement, so it would be lost";
  }
  return "";
}

void requireSavable(const LoadedModel& model) {
  const std::string why = whyNotSavable(model);
  if (!why.empty()) throw UserError("cannot save the adapted model: " + why);
}

void saveAdaptedArchive(const LoadedModel& model, const std::vector<std::string>& adapters,
                        const std::string& out_path, const DecodeGraphsToSave* decode) {
  requireSavable(model);
  const bool with_decode = decode != nullptr && model.card.decode;
  if (with_decode) {
    requireSavable(*decode->prefill);
    requireSavable(*decode->step);
  }
  torch::NoGradGuard no_grad;
  // A module of its own, with types of its own, whose methods can be replaced.
  torch::jit::Module saved = loadArchiveMapped(model.path).module;
  nlohmann::json module_paths = modulePathsOf(*replaceMethod(saved, "forward", model));
  // `identity` is what caches key the adapted model on (the archive's hash chained with each
  // adapter's name); `from_sha256` the archive it was made from, as `inspect` reports it.
  nlohmann::json applied{{"adapters", adapters},
                         {"identity", model.sha256},
                         {"from_archive", model.recipe.archive},
                         {"from_sha256", model.recipe.sha256}};

  nlohmann::json card = modelCardToJson(model.card);
  if (with_decode) {
    // Each decode graph's weights are read from the module as the forward's are; a weight two
    // graphs' adapters changed alike is one constant in the archive (TorchScript's export
    // stores equal tensor constants once).
    const DecodeSpec& spec = *model.card.decode;
    module_paths["methods"] = {
        {spec.prefill.method,
         modulePathsOf(*replaceMethod(saved, spec.prefill.method, *decode->prefill))},
        {spec.step.method, modulePathsOf(*replaceMethod(saved, spec.step.method, *decode->step))}};
    applied["decode"] = {{spec.prefill.method, decode->prefill_adapters},
                         {spec.step.method, decode->step_adapters}};
  } else {
    // Adapters rewrote the forward only: the archive's prefill and step are the original ones,
    // so the saved card does not offer them as this model's decode interface.
    card.erase("decode");
  }
  torch::jit::ExtraFilesMap extra = {{ModelCard::kArchivePath, card.dump(2)},
                                     {kAdaptersRecordPath, applied.dump(2)},
                                     {ModelCard::kModulePathsPath, module_paths.dump()}};
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
  // Written beside and renamed into place: a failed save leaves whatever was there, and an
  // archive saved over the model it came from does not truncate the file its weights are mapped
  // from (mapped_archive.h) while they are being written.
  const std::string partial = out_path + ".partial-" + std::to_string(::getpid());
  try {
    saved.save(partial, extra);
  } catch (const std::exception& e) {
    std::remove(partial.c_str());
    const std::string what = e.what();
    throw UserError(out_path + ": cannot write the archive: " + what.substr(0, what.find('\n')));
  }
  // Hashed while its bytes are in the page cache, before anyone else can see it: every later
  // command on the archive needs its SHA-256.
  std::string digest;
  try {
    digest = sha256File(partial);
  } catch (...) {
    std::remove(partial.c_str());
    throw;
  }
  if (std::rename(partial.c_str(), out_path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(partial.c_str());
    throw UserError(out_path + ": cannot write the archive: " + why);
  }
  rememberWrittenSha256(out_path, digest);
}

}  // namespace stickler
