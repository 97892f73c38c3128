#include "simulator/graph/loaded_model.h"

#include "simulator/graph/decode_card.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <regex>
#include <sstream>
#include <unordered_set>

#include "simulator/graph/example_inputs.h"
#include "simulator/graph/mapped_archive.h"
#include "simulator/graph/model_archive.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/shared_modules.h"
#include "simulator/interpreter/shape_only.h"
#include "simulator/support/available_memory.h"
#include "simulator/support/errors.h"
#include "simulator/support/freed_memory.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/task_control.h"
#include "simulator/support/text_format.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;
namespace attr = torch::jit::attr;

torch::jit::Module loadModule(const std::string& path) {
  try {
    // The weights are the file's pages, shared with every process that loads the model.
    return loadArchiveMapped(path).module;
  } catch (const UserError&) {
    throw;
  } catch (const c10::Error& e) {
    throw UserError(path +
                    ": LibTorch cannot load the archive: " + firstLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw UserError(path + ": LibTorch cannot load the archive: " + firstLine(e.what()));
  }
}

// "__torch__.families.vit.___torch_mangle_621.ViTModel" -> "__torch__.families.vit.ViTModel":
// TorchScript numbers each compiled copy of a class; the number says nothing to a reader.
std::string withoutMangling(const std::string& qualified) {
  static const std::regex kMangle("___torch_mangle_[0-9]+\\.");
  return std::regex_replace(qualified, kMangle, "");
}

ModuleTable buildModuleTable(const torch::jit::Module& root) {
  ModuleTable table;
  auto entryFor = [](const std::string& path, const torch::jit::Module& module) {
    ModuleEntry entry;
    entry.path = path;
    const auto& name = module.type()->name();
    entry.class_name = name ? name->name() : "Module";
    entry.qualified_class = name ? withoutMangling(name->qualifiedName()) : "Module";
    for (const auto& parameter : module.named_parameters(/*recurse=*/false)) {
      entry.own_parameters += parameter.value.numel();
    }
    for (const auto& buffer : module.named_buffers(/*recurse=*/false)) {
      entry.own_buffers += buffer.value.numel();
    }
    return entry;
  };
  for (const auto& named : root.named_modules()) table.add(entryFor(named.name, named.value));
  return table;
}

std::string signatureText(const c10::FunctionSchema& schema) {
  std::string text = "forward(";
  for (size_t i = 1; i < schema.arguments().size(); ++i) {
    text += (i > 1 ? ", " : "") + schema.arguments()[i].name();
  }
  return text + ")";
}

// The card must name the forward's arguments in order; trailing ones may be left to defaults.
void checkCardAgainstSignature(const ModelCard& card, const c10::FunctionSchema& schema,
                               const std::string& origin) {
  const auto& arguments = schema.arguments();
  const size_t available = arguments.size() - 1;
  if (card.inputs.size() > available) {
    throw UserError(origin + ": " + std::to_string(card.inputs.size()) +
                    " inputs given, but the model takes " + std::to_string(available) + ": " +
                    signatureText(schema));
  }
  for (size_t i = 0; i < card.inputs.size(); ++i) {
    const std::string& expected = arguments[i + 1].name();
    if (card.inputs[i].name != expected) {
      std::string message = origin + ": input " + std::to_string(i + 1) + " is named '";
      message += card.inputs[i].name + "' but the model's argument is '" + expected + "': ";
      throw UserError(message + signatureText(schema));
    }
  }
  for (size_t i = card.inputs.size() + 1; i < arguments.size(); ++i) {
    if (!arguments[i].default_value()) {
      throw UserError(origin + ": no value for the model's argument '" + arguments[i].name() +
                      "' (it has no default): " + signatureText(schema));
    }
  }
}

// For integer inputs without a declared kind: the vocabulary of an embedding they index.
std::optional<int64_t> vocabularyIndexedBy(const torch::jit::Graph& graph, const Value* input,
                                           const c10::IValue& self_value) {
  static const std::vector<c10::Symbol> kPassThrough = {
      aten::view,    aten::reshape, aten::to,    aten::contiguous, aten::unsqueeze,
      aten::squeeze, aten::expand,  aten::clone, aten::flatten};
  for (const Node* node : allNodes(graph)) {
    if (node->kind() != aten::embedding) continue;
    const Value* indices = node->input(1);
    while (indices != input && std::find(kPassThrough.begin(), kPassThrough.end(),
                                         indices->node()->kind()) != kPassThrough.end()) {
      indices = indices->node()->input(0);
    }
    if (indices != input) continue;
    auto weight = resolveAttribute(node->input(0), graph.inputs().at(0), self_value);
    if (weight && weight->isTensor() && weight->toTensor().dim() == 2) {
      return weight->toTensor().size(0);
    }
  }
  return std::nullopt;
}

void resolveAutoKinds(LoadedModel& model) {
  const auto self_value = c10::IValue(model.module._ivalue());
  for (size_t i = 0; i < model.card.inputs.size(); ++i) {
    InputSpec& input = model.card.inputs[i];
    if (input.kind != InputKind::kAuto) continue;
    if (!isIntegral(input.dtype)) {
      input.kind = InputKind::kFloat;
      input.low = -1.0;
      input.high = 1.0;
      continue;
    }
    if (input.name.find("mask") != std::string::npos) {
      input.kind = InputKind::kMask;
    } else if (input.name.find("position") != std::string::npos) {
      input.kind = InputKind::kPositions;
    } else if (auto vocab =
                   vocabularyIndexedBy(*model.graph, model.graph->inputs().at(i + 1), self_value)) {
      input.kind = InputKind::kTokenIds;
      input.vocab_size = *vocab;
    } else {
      input.kind = InputKind::kInteger;
      input.low = 0;
      input.high = 2;
    }
  }
}

// Records what each node saw the first time it ran, and lets another observer watch too.
class ShapeRecorder : public ExecutionObserver {
 public:
  ShapeRecorder(std::unordered_map<const Node*, NodeRecord>& records, ExecutionObserver* also)
      : records_(records), also_(also) {}

  void onModuleEnter(const ModuleCall& call, const ValueView& inputs) override {
    if (also_ != nullptr) also_->onModuleEnter(call, inputs);
  }
  void beforeNode(const Node& node, const ModuleCall* module, const NodeInputs& inputs) override {
    if (also_ != nullptr) also_->beforeNode(node, module, inputs);
  }
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override {
    if (also_ != nullptr) also_->onModuleExit(call, outputs);
  }

  void onNode(const Node& node, const ModuleCall* module, const ValueView& inputs,
              const MutableValueView& outputs) override {
    if (also_ != nullptr) also_->onNode(node, module, inputs, outputs);
    NodeRecord& record = records_[&node];
    if (record.executions++ > 0) return;
    for (size_t i = 0; i < inputs.size(); ++i) record.inputs.push_back(describeValue(inputs[i]));
    for (size_t i = 0; i < outputs.size(); ++i) {
      record.outputs.push_back(describeValue(outputs[i]));
    }
  }

 private:
  std::unordered_map<const Node*, NodeRecord>& records_;
  ExecutionObserver* also_;
};

// Builds the interpreter and runs the example inputs once, recording what each node sees.
void runAndRecord(LoadedModel& model, ExecutionObserver* also = nullptr) {
  const bool from_shapes = model.shapes_only || model.records_from_shapes;
  model.interpreter = std::make_unique<Interpreter>(
      from_shapes ? withWeightsOnMeta(model.module) : model.module, model.graph, model.modules);
  ShapeRecorder recorder(model.records, also);
  const double start = phaseClock();
  try {
    model.example_outputs = model.interpreter->run(model.example_inputs, &recorder);
  } catch (const Cancelled&) {
    throw;
  } catch (const UserError& e) {
    throw UserError(model.path + ": the model does not run on its example inputs: " + e.what());
  } catch (const std::exception& e) {  // e.g. a branch condition of the wrong type
    throw UserError(model.path +
                    ": the model does not run on its example inputs: " + firstLine(e.what()));
  }
  if (from_shapes) {
    for (c10::IValue& output : model.example_outputs) output = floatsOnMeta(output);
  }
  // The run's freed memory was kept for its own next operators; what follows a load (a check in
  // float64, a comparison, a model host's run) asks for other sizes, and would hold it beside
  // its own: 0.1-0.2 GB more at the peak of the review gate's worker at 110M parameters.
  if (!from_shapes) releaseFreedMemory();
  notePhase(
      std::string(from_shapes ? "recorded from shapes: " : "ran its example inputs: ") + model.path,
      phaseClock() - start);
  if (model.records_from_shapes && !model.shapes_only) {
    model.interpreter = std::make_unique<Interpreter>(model.module, model.graph, model.modules);
  }
}

// Records from shapes when the model asks to, and from values when shapes alone do not carry
// the model through (an operator needs values that ones in place of its weights' cannot stand
// for). `also` sees values: with it the model records from values.
void recordFromShapesOrValues(LoadedModel& model, ExecutionObserver* also = nullptr) {
  if (also != nullptr) model.records_from_shapes = false;
  if (!model.shapes_only && !model.records_from_shapes) return runAndRecord(model, also);
  try {
    runAndRecord(model, also);
  } catch (const UserError&) {
    model.shapes_only = false;
    model.records_from_shapes = false;
    model.records.clear();
    runAndRecord(model, also);
  }
}

}  // namespace

LoadOptions loadOptionsFromFlags(const std::vector<std::string>& input_flags) {
  LoadOptions options;
  for (const auto& flag : input_flags) options.inputs.push_back(parseInputFlag(flag));
  return options;
}

namespace {

// The stored values of the card's captured inputs, checked against their specs.
std::vector<at::Tensor> capturedInputs(const ModelCard& card, const ArchiveSummary& archive,
                                       const std::string& path) {
  std::vector<at::Tensor> captured(card.inputs.size());
  const bool any = std::any_of(card.inputs.begin(), card.inputs.end(), [](const InputSpec& input) {
    return input.kind == InputKind::kCaptured;
  });
  if (!any) return captured;
  const std::string where = path + " (" + ModelCard::kCapturedInputsPath + ")";
  if (!archive.captured_inputs) {
    throw UserError(path + ": inputs of kind captured, but no " + ModelCard::kCapturedInputsPath +
                    " in the archive");
  }
  c10::IValue stored;
  try {
    const std::vector<char> bytes(archive.captured_inputs->begin(), archive.captured_inputs->end());
    stored = torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw UserError(where + ": not a pickled tuple of tensors");
  }
  if (!stored.isTuple() || stored.toTupleRef().elements().size() != card.inputs.size()) {
    throw UserError(where + ": expected a tuple of " + std::to_string(card.inputs.size()) +
                    " values, one per card input");
  }
  for (size_t i = 0; i < card.inputs.size(); ++i) {
    const InputSpec& input = card.inputs[i];
    if (input.kind != InputKind::kCaptured) continue;
    const c10::IValue& value = stored.toTupleRef().elements()[i];
    if (!value.isTensor() || value.toTensor().sizes() != c10::IntArrayRef(input.shape) ||
        value.toTensor().scalar_type() != toScalarType(input.dtype)) {
      throw UserError(where + ": the value of '" + input.name + "' is not a " +
                      dtypeName(input.dtype) + " tensor of shape " + shapeString(input.shape));
    }
    captured[i] = value.toTensor();
  }
  return captured;
}

// An archive whose graph holds tables computed for its card's input shapes gives wrong answers
// for others: --input may restate those shapes but not change them.
void refuseOtherShapes(const std::vector<InputSpec>& fixed, const std::vector<InputSpec>& given,
                       const std::string& path) {
  std::string shapes;
  bool same = fixed.size() == given.size();
  for (size_t i = 0; i < fixed.size(); ++i) {
    shapes += (i ? ", " : "") + fixed[i].name + " " + shapeString(fixed[i].shape);
    same = same && i < given.size() && given[i].shape == fixed[i].shape;
  }
  if (same) return;
  throw UserError(path +
                  ": an adapter (precompute_tables) specialized this archive to its inputs' "
                  "shapes (" +
                  shapes +
                  "); --input with other shapes would compute with the wrong tables. "
                  "Adapt the original model with those inputs instead");
}

}  // namespace

void requireWeights(const LoadedModel& model, const std::string& doing) {
  if (model.shapes_only) {
    throw UserError(model.path +
                    " was loaded for its shapes only (its weights unread): it can "
                    "be inspected and checked, not " +
                    doing);
  }
  if (model.interpreter != nullptr && model.interpreter->weightless()) {
    throw UserError(model.path +
                    " stores no weights (each is one value expanded to its shape, "
                    "as a sweep's real geometries are): it can be inspected and checked, not " +
                    doing);
  }
}

std::unique_ptr<LoadedModel> loadModel(const std::string& path, const LoadOptions& options) {
  auto model = std::make_unique<LoadedModel>();
  model->path = path;
  const ArchiveSummary archive = inspectArchive(path);
  model->sha256 = archive.sha256;
  if (archive.model_card) {
    try {
      model->card =
          parseModelCard(*archive.model_card, path + " (" + ModelCard::kArchivePath + ")");
    } catch (const UserError&) {
      if (options.inputs.empty()) throw;  // --input replaces a card that cannot be read
    }
  }
  std::string card_origin = path + " (" + ModelCard::kArchivePath + ")";
  if (!options.inputs.empty()) {
    if (model->card.fixed_shapes) refuseOtherShapes(model->card.inputs, options.inputs, path);
    checkInputBytes(options.inputs, "--input");
    model->card.inputs = options.inputs;
    model->card.from_archive = false;
    card_origin = "--input";
  } else if (!archive.model_card) {
    throw UserError(path + ": no model card (" + ModelCard::kArchivePath +
                    ") in the archive: give the inputs with --input name:shape:dtype");
  }

  std::string method = "forward";
  if (options.graph != ModelGraph::kForward) {
    if (!options.inputs.empty()) {
      throw UserError("--input gives the forward's inputs; a decode graph's come from the card");
    }
    if (!model->card.decode) {
      throw UserError(path +
                      ": its model card has no decode interface (docs/model-card.md "
                      "\"Decoding\" says how to export one)");
    }
    const DecodeGraph& graph = decodeGraphOf(*model->card.decode, options.graph);
    method = graph.method;
    model->card.inputs = graph.inputs;
    model->card.outputs = graph.outputs;
    card_origin +=
        " decode." + std::string(options.graph == ModelGraph::kPrefill ? "prefill" : "step");
  }

  // The memory check is for a load: a module shared with a model alive here costs nothing.
  model->module = sharedModule(path, archive.sha256, [&] {
    checkArchiveFitsInMemory(archive, options.shapes_only, availableMemoryBytes(), path);
    return loadModule(path);
  });
  if (!model->module.find_method(method)) {
    throw UserError(path + ": the model has no method " + method +
                    (method == "forward" ? "" : " (its card's decode interface names it)"));
  }
  model->graph_kind = options.graph;
  const c10::FunctionSchema& schema = model->module.get_method(method).function().getSchema();
  checkCardAgainstSignature(model->card, schema, card_origin);
  model->modules = buildModuleTable(model->module);
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& parameter : model->module.parameters(/*recurse=*/true)) {
    if (seen.insert(parameter.unsafeGetTensorImpl()).second) {
      model->unique_parameters += parameter.numel();
    }
  }
  model->graph = inlineWithModulePaths(model->module, method);
  if (archive.module_paths) {
    try {
      restoreModulePaths(*model->graph, *archive.module_paths, method);
    } catch (const UserError& e) {
      throw UserError(path + ": " + e.what());
    }
  }
  resolveAutoKinds(*model);

  model->captured_inputs = capturedInputs(model->card, archive, path);
  model->seed = options.seed;
  model->shapes_only = options.shapes_only;
  model->records_from_shapes = options.records_from_shapes;
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  model->recipe.archive = error ? path : absolute.string();
  model->recipe.sha256 = model->sha256;
  model->recipe.inputs = options.inputs;
  model->recipe.seed = options.seed;
  model->recipe.graph = options.graph;
  model->example_inputs =
      makeExampleInputs(model->card.inputs, schema, options.seed, model->captured_inputs);
  recordFromShapesOrValues(*model);
  return model;
}

namespace {

// `base` with `module` and `graph` in its place, not yet run.
std::unique_ptr<LoadedModel> unrecordedCopy(const LoadedModel& base,
                                            const torch::jit::Module& module,
                                            std::shared_ptr<torch::jit::Graph> graph,
                                            const std::string& identity) {
  auto model = std::make_unique<LoadedModel>();
  model->path = base.path;
  model->sha256 = identity;
  model->card = base.card;
  model->module = module;
  model->graph = std::move(graph);
  model->modules = base.modules;
  model->unique_parameters = base.unique_parameters;
  model->host_modules = base.host_modules;
  model->adapters = base.adapters;
  model->recipe = base.recipe;
  model->graph_kind = base.graph_kind;
  model->example_inputs = base.example_inputs;
  model->seed = base.seed;
  model->captured_inputs = base.captured_inputs;
  model->shapes_only = base.shapes_only;
  model->records_from_shapes = base.records_from_shapes;
  return model;
}

}  // namespace

std::unique_ptr<LoadedModel> rebuildModel(const LoadedModel& base, const torch::jit::Module& module,
                                          std::shared_ptr<torch::jit::Graph> graph,
                                          const std::string& identity, ExecutionObserver* also,
                                          RecordFrom record_from) {
  auto model = unrecordedCopy(base, module, std::move(graph), identity);
  if (record_from != RecordFrom::kAsTheBase) {
    model->records_from_shapes = record_from == RecordFrom::kShapes;
  }
  recordFromShapesOrValues(*model, also);
  return model;
}

std::unique_ptr<LoadedModel> withExampleInputs(const LoadedModel& base,
                                               std::vector<c10::IValue> inputs) {
  if (inputs.size() != base.example_inputs.size()) {
    throw std::logic_error("withExampleInputs: " + std::to_string(inputs.size()) +
                           " inputs for a model of " + std::to_string(base.example_inputs.size()));
  }
  auto model = unrecordedCopy(base, base.module, base.graph->copy(), base.sha256);
  model->example_inputs = std::move(inputs);
  // Values: these inputs' outputs are a reference to compare with.
  model->shapes_only = false;
  model->records_from_shapes = false;
  recordFromShapesOrValues(*model);
  return model;
}

}  // namespace stickler
