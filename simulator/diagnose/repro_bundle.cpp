#include "simulator/diagnose/repro_bundle.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/node_info.h"
#include "simulator/lowering/lowering.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

// What one node consumed on the model's example inputs (its first execution).
class InputCapture : public ExecutionObserver {
 public:
  explicit InputCapture(const Node& target) : target_(target) {}
  void beforeNode(const Node& node, const ModuleCall* /*module*/,
                  const NodeInputs& inputs) override {
    if (&node != &target_ || seen_) return;
    seen_ = true;
    for (size_t i = 0; i < inputs.size(); ++i) values_.push_back(detached(inputs[i]));
  }
  bool seen() const { return seen_; }
  const std::vector<c10::IValue>& values() const { return values_; }

 private:
  static c10::IValue detached(const c10::IValue& value) {
    if (value.isTensor()) return value.toTensor().detach().clone();
    return value;
  }
  const Node& target_;
  bool seen_ = false;
  std::vector<c10::IValue> values_;
};

std::optional<DType> dtypeOf(const at::Tensor& tensor) {
  return dtypeFromName(dtypeName(tensor.scalar_type()));
}

// The archive: forward(self, input0, ...) runs the node on its activations, with weights and
// scalars as constants.
struct ReproModule {
  torch::jit::Module module{"__torch__.stickler.Repro"};
  std::vector<InputSpec> inputs;
  std::vector<at::Tensor> values;
};

ReproModule buildRepro(const Node& node, const std::vector<c10::IValue>& consumed) {
  ReproModule repro;
  auto graph = std::make_shared<torch::jit::Graph>();
  Value* self = graph->addInput("self");
  self->setType(repro.module.type());
  auto addCaptured = [&](const at::Tensor& tensor) {
    const std::string name = "input" + std::to_string(repro.inputs.size());
    Value* input = graph->addInput(name);
    input->setType(c10::TensorType::create(tensor));
    auto dtype = dtypeOf(tensor);
    if (!dtype) throw UserError("cannot capture a " + dtypeName(tensor.scalar_type()) + " input");
    repro.inputs.push_back({name, tensor.sizes().vec(), *dtype, InputKind::kCaptured});
    repro.values.push_back(tensor);
    return input;
  };
  std::vector<Value*> arguments;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const c10::IValue& value = consumed.at(i);
    const Node* producer = node.input(i)->node();
    const bool weight = producer->kind() == prim::GetAttr || producer->kind() == prim::Constant;
    if (value.isTensor() && !weight) {
      arguments.push_back(addCaptured(value.toTensor()));
    } else if (value.isTensorList()) {
      std::vector<Value*> elements;
      for (const at::Tensor& tensor : value.toTensorVector())
        elements.push_back(addCaptured(tensor));
      arguments.push_back(
          graph->insertNode(graph->createList(c10::TensorType::get(), elements))->output());
    } else {
      arguments.push_back(graph->insertConstant(value));
    }
  }
  if (repro.inputs.empty()) {
    throw UserError("the operator reads no activation to capture: a repro would have no input");
  }
  Node* copy = graph->insertNode(graph->create(node.kind(), arguments, node.outputs().size()));
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    copy->output(i)->setType(node.output(i)->type());
  }
  if (copy->outputs().size() == 1) {
    graph->registerOutput(copy->output());
  } else {
    graph->registerOutput(graph->insertNode(graph->createTuple(copy->outputs()))->output());
  }
  const c10::QualifiedName forward_name(*repro.module.type()->name(), "forward");
  auto* forward = repro.module._ivalue()->compilation_unit()->create_function(forward_name, graph);
  repro.module.type()->addMethod(forward);
  return repro;
}

}  // namespace

ReproBundle writeBlockerRepro(const LoadedModel& model, const Node& node, const std::string& rule,
                              const DeviceProfile& profile, const std::string& directory) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  InputCapture capture(node);
  model.interpreter->run(model.example_inputs, &capture);
  if (!capture.seen()) throw UserError("the operator never ran on the example inputs");
  ReproModule repro = buildRepro(node, capture.values());

  const std::string op = node.kind().toQualString();
  const NodeOrigin origin = originOf(node, model.modules);
  ModelCard card;
  card.name = model.card.name + "-repro";
  card.family = "repro";
  card.description = rule + " on " + op + " in " + displayPath(origin.module_path) + " of " +
                     model.card.name + ", with the inputs the model gave it";
  card.inputs = repro.inputs;
  card.config = {{"from_model", model.card.name},
                 {"from_archive", model.path},
                 {"module", displayPath(origin.module_path)},
                 {"module_class", origin.module_class},
                 {"op", op},
                 {"rule", rule},
                 {"profile", profile.name}};
  std::vector<c10::IValue> stored(repro.values.begin(), repro.values.end());
  const auto pickled = torch::jit::pickle_save(c10::ivalue::Tuple::create(stored));

  ReproBundle bundle;
  bundle.directory = directory;
  bundle.archive = (fs::path(directory) / "repro.pt").string();
  fs::create_directories(directory);
  repro.module.save(bundle.archive, {{ModelCard::kArchivePath, modelCardToJson(card).dump(2)},
                                     {ModelCard::kCapturedInputsPath,
                                      std::string(pickled.begin(), pickled.end())}});
  // A shipped profile by its name, any other by its file.
  const bool shipped = fs::path(profile.path).parent_path() == fs::path(profileDirectory());
  bundle.command = "stickler run " + bundle.archive +
                   " --backend spyre-sim:" + (shipped ? profile.name : profile.path);

  // The same failure, or no bundle worth handing over: the archive alone, lowered for the same
  // profile, must be blocked by the same rule on the same operator.
  const auto alone = loadModel(bundle.archive);
  const LoweringResult lowered = lower(*alone, profile, Placement{});
  bundle.observed = lowered.blockers.empty() ? "compiles" : "";
  for (const Blocker& blocker : lowered.blockers) {
    const std::string seen = blocker.rule + " on " + blocker.node->kind().toQualString();
    bundle.observed += (bundle.observed.empty() ? "" : "; ") + seen;
    bundle.reproduces =
        bundle.reproduces || (blocker.rule == rule && blocker.node->kind().toQualString() == op);
  }
  std::ofstream(fs::path(directory) / "README.md")
      << "# Repro: " << rule << " on " << op << "\n\n"
      << card.description << " (module class " << origin.module_class << ").\n\n"
      << "```\n"
      << bundle.command << "\n```\n\n"
      << (bundle.reproduces ? "Checked: the archive alone shows the same blocker ("
                            : "Not reproduced by the archive alone (it shows: ")
      << bundle.observed << ").\n";
  bundle.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bundle;
}

nlohmann::json reproToJson(const ReproBundle& bundle) {
  return {{"directory", bundle.directory}, {"archive", bundle.archive},
          {"command", bundle.command},     {"reproduces", bundle.reproduces},
          {"observed", bundle.observed},   {"seconds", bundle.seconds}};
}

}  // namespace stickler
