// The node interpreter: what module.forward computes, module boundaries in Python's call order,
// values an observer replaces, control flow, and freeing after last use.
#include "simulator/interpreter/interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "simulator/backends/float64_graph.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using testing::zooModel;
using testing::zooPath;

// The same values to float32's accuracy (integers exactly). Never bytes: module.forward's optimized
// plan may pick other kernels (fused or decomposed), and BLAS picks its blocking per CPU, thread
// count and operand, so sums run in other orders; equal bytes hold for no comparison on every
// machine.
::testing::AssertionResult sameToFloat32Accuracy(const at::Tensor& ours, const at::Tensor& theirs) {
  if (ours.sizes() != theirs.sizes() || ours.scalar_type() != theirs.scalar_type()) {
    return ::testing::AssertionFailure()
           << "shape or dtype differs: " << ours.sizes() << " vs " << theirs.sizes();
  }
  if (!ours.is_floating_point()) {
    return ours.equal(theirs) ? ::testing::AssertionSuccess()
                              : ::testing::AssertionFailure() << "values differ";
  }
  const auto wide = theirs.to(at::kDouble);
  const double difference = (ours.to(at::kDouble) - wide).abs().max().item<double>();
  const double bound = 1e-5 * std::max(1.0, wide.abs().max().item<double>());
  if (!(difference <= bound)) {
    return ::testing::AssertionFailure()
           << "max abs difference " << difference << " above " << bound;
  }
  return ::testing::AssertionSuccess();
}

// `module` saved with a card whose one input is x, float32 of `shape` (JSON, "[1, 8, 64]"), and
// loaded as Stickler loads an archive.
std::unique_ptr<LoadedModel> savedAndLoaded(torch::jit::Module& module, const std::string& shape) {
  const std::string path = testing::uniqueTempPath(module.type()->name()->name() + ".pt");
  module.save(path, {{"stickler/model.json", R"({"inputs": [{"name": "x", "shape": )" + shape +
                                                 R"(, "dtype": "float32", "kind": "float"}]})"}});
  auto model = loadModel(path);
  std::remove(path.c_str());
  return model;
}

class ZooInterpreter : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooInterpreter, OutputsMatchModuleForward) {
  const auto model = loadModel(zooPath(GetParam() + ".pt"));
  const auto ours = flattenTensors(model->interpreter->run(model->example_inputs));
  ASSERT_FALSE(ours.empty());
  // The JIT's profiling executor switches to an optimized plan after its first runs: compare
  // against several runs so both plans are covered.
  for (int run = 0; run < 3; ++run) {
    c10::InferenceMode inference;
    const auto theirs = flattenTensors({model->module.forward(model->example_inputs)});
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(sameToFloat32Accuracy(ours[i], theirs[i]))
          << "output " << i << " on forward run " << run;
    }
  }
  const auto& shapes = zooModel(GetParam()).at("output_shapes");
  ASSERT_EQ(ours.size(), shapes.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].sizes().vec(), shapes[i].get<std::vector<int64_t>>());
  }
}

// Records module boundaries and checks that they nest.
class BoundaryRecorder : public ExecutionObserver {
 public:
  void onModuleEnter(const ModuleCall& call, const ValueView&) override {
    entered.push_back(call.path);
    stack.push_back(&call);
    EXPECT_EQ(call.depth, static_cast<int>(stack.size())) << call.path;
  }
  void onModuleExit(const ModuleCall& call, const MutableValueView&) override {
    ASSERT_FALSE(stack.empty()) << "exit from " << call.path << " without an enter";
    EXPECT_EQ(stack.back(), &call)
        << "exit from " << call.path << " while in " << stack.back()->path;
    stack.pop_back();
  }
  void onNode(const torch::jit::Node& node, const ModuleCall* module, const ValueView&,
              const MutableValueView&) override {
    const std::string path = modulePathOf(node);
    if (path.empty()) {
      EXPECT_EQ(module, nullptr);
    } else {
      ASSERT_NE(module, nullptr) << node.kind().toQualString();
      EXPECT_EQ(module->path, path);
      EXPECT_EQ(module, stack.back()) << "node of " << path << " runs outside its module";
    }
  }
  std::vector<std::string> entered;
  std::vector<const ModuleCall*> stack;
};

TEST_P(ZooInterpreter, ModuleBoundariesComeInPythonsCallOrder) {
  const auto model = loadModel(zooPath(GetParam() + ".pt"));
  BoundaryRecorder recorder;
  model->interpreter->run(model->example_inputs, &recorder);
  EXPECT_TRUE(recorder.stack.empty()) << "modules left open";

  // Python's forward pre-hooks saw every call; a module call with no node to execute (an
  // Identity, or one the tracer found dead) has no boundary to observe.
  std::set<std::string> paths_with_nodes;
  for (const torch::jit::Node* node : allNodes(*model->graph)) {
    if (node->kind() == torch::jit::prim::Constant || node->kind() == torch::jit::prim::GetAttr) {
      continue;
    }
    for (std::string path = modulePathOf(*node); !path.empty();
         path = path.find('.') == std::string::npos ? "" : path.substr(0, path.rfind('.'))) {
      paths_with_nodes.insert(path);
    }
  }
  std::vector<std::string> expected;
  for (const auto& path : zooModel(GetParam()).at("module_calls")) {
    if (paths_with_nodes.count(path)) expected.push_back(path);
  }
  EXPECT_GT(expected.size(), 5u);
  EXPECT_EQ(recorder.entered, expected);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooInterpreter, ::testing::ValuesIn(testing::zooModelNames()),
                         [](const auto& info) { return testing::testName(info.param); });

TEST(InterpreterForeignModel, MatchesForwardWithFlagInputs) {
  const auto& foreign = testing::zooIndex().at("foreign").at(0);
  LoadOptions options;
  for (const auto& flag : foreign.at("inputs")) options.inputs.push_back(parseInputFlag(flag));
  const auto model = loadModel(zooPath(foreign.at("file")), options);
  const auto ours = flattenTensors(model->interpreter->run(model->example_inputs));
  c10::InferenceMode inference;
  const auto theirs = flattenTensors({model->module.forward(model->example_inputs)});
  ASSERT_EQ(ours.size(), 1u);
  EXPECT_TRUE(sameToFloat32Accuracy(ours[0], theirs[0]));

  BoundaryRecorder recorder;
  model->interpreter->run(model->example_inputs, &recorder);
  std::vector<std::string> expected;
  for (const auto& path : foreign.at("module_calls")) expected.push_back(path);
  EXPECT_EQ(recorder.entered, expected);  // every module of this ResNet computes something
}

// Replaces the outputs of one module call with zeros.
class ZeroModuleOutput : public ExecutionObserver {
 public:
  explicit ZeroModuleOutput(std::string path) : path_(std::move(path)) {}
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override {
    if (call.path != path_) return;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].isTensor()) {
        outputs.replace(i, at::zeros_like(outputs[i].toTensor()));
        ++replaced;
      }
    }
  }
  int replaced = 0;

 private:
  std::string path_;
};

TEST(InterpreterObserver, AReplacedModuleOutputIsWhatFlowsOn) {
  const auto model = loadModel(zooPath("llama-tiny.pt"));
  const auto baseline = flattenTensors(model->interpreter->run(model->example_inputs)).at(0);
  EXPECT_GT(baseline.abs().max().item<float>(), 0.0f);
  // lm_head has no bias: zeros into it give all-zero logits.
  ZeroModuleOutput zero("model.norm");
  const auto logits = flattenTensors(model->interpreter->run(model->example_inputs, &zero)).at(0);
  EXPECT_EQ(zero.replaced, 1);
  EXPECT_EQ(logits.abs().max().item<float>(), 0.0f);
}

TEST(InterpreterObserver, AReplacedNodeOutputIsWhatFlowsOn) {
  const auto model = loadModel(zooPath("gpt2-tiny.pt"));
  const auto baseline = flattenTensors(model->interpreter->run(model->example_inputs)).at(0);

  struct ReplaceFirstEmbedding : ExecutionObserver {
    bool identical = false;
    bool done = false;
    void onNode(const torch::jit::Node& node, const ModuleCall*, const ValueView&,
                const MutableValueView& outputs) override {
      if (done || node.kind() != torch::jit::aten::embedding) return;
      const auto original = outputs[0].toTensor();
      outputs.replace(0, identical ? original.clone() : original * 2);
      done = true;
    }
  };
  ReplaceFirstEmbedding same;
  same.identical = true;
  EXPECT_TRUE(sameToFloat32Accuracy(
      flattenTensors(model->interpreter->run(model->example_inputs, &same)).at(0), baseline));
  ReplaceFirstEmbedding doubled;
  const auto changed =
      flattenTensors(model->interpreter->run(model->example_inputs, &doubled)).at(0);
  EXPECT_TRUE(doubled.done);
  EXPECT_FALSE(sameToFloat32Accuracy(changed, baseline));
}

TEST(InterpreterObserver, ModuleCallsExposeTheirInputsAndOutputs) {
  const auto model = loadModel(zooPath("gpt2-tiny.pt"));
  struct Capture : ExecutionObserver {
    std::vector<std::vector<int64_t>> in, out;
    void onModuleEnter(const ModuleCall& call, const ValueView& inputs) override {
      if (call.path != "transformer.h.1") return;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].isTensor()) in.push_back(inputs[i].toTensor().sizes().vec());
      }
    }
    void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override {
      if (call.path != "transformer.h.1") return;
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].isTensor()) out.push_back(outputs[i].toTensor().sizes().vec());
      }
    }
  } capture;
  model->interpreter->run(model->example_inputs, &capture);
  const std::vector<int64_t> hidden{1, 16, 64};
  ASSERT_EQ(capture.in.size(), 1u);  // the hidden states; parameters are not inputs
  EXPECT_EQ(capture.in[0], hidden);
  ASSERT_EQ(capture.out.size(), 1u);
  EXPECT_EQ(capture.out[0], hidden);
}

TEST(InterpreterControlFlow, LoopsRepeatAndUntakenBranchesDoNotRun) {
  const auto moe = loadModel(zooPath("mixtral-tiny.pt"));
  int64_t in_loop = 0;
  for (const auto& [node, record] : moe->records) {
    if (node->owningBlock()->owningNode() != nullptr &&
        node->owningBlock()->owningNode()->kind() == torch::jit::prim::Loop &&
        node->kind().is_aten()) {
      EXPECT_EQ(record.executions, 2) << node->kind().toQualString();  // top_k = 2 trips
      ++in_loop;
    }
  }
  EXPECT_GT(in_loop, 0);

  const auto t5 = loadModel(zooPath("t5-encoder-tiny.pt"));
  size_t never_ran = 0;
  for (const torch::jit::Node* node : allNodes(*t5->graph)) {
    if (node->kind().is_aten() && !t5->records.count(node)) ++never_ran;
  }
  EXPECT_GT(never_ran, 0u);  // e.g. the `else` of `if bidirectional`
}

// At every node, each tensor that an earlier node produced and that is still alive must be
// one that a node at or after this one still reads, or a graph output.
TEST(InterpreterMemory, IntermediatesAreFreedAfterTheirLastUse) {
  for (const std::string name : {"gpt2-tiny", "llama-tiny"}) {
    const auto model = loadModel(zooPath(name + ".pt"));
    std::unordered_map<const torch::jit::Node*, size_t> position;
    for (const torch::jit::Node* node : allNodes(*model->graph)) position[node] = position.size();
    struct Watcher : ExecutionObserver {
      using Weak = c10::weak_intrusive_ptr<c10::TensorImpl>;
      const std::unordered_map<const torch::jit::Node*, size_t>* position;
      // Each value a node produced, with the tensors it holds (itself, or a list's elements).
      std::vector<std::pair<const torch::jit::Value*, std::vector<Weak>>> seen;
      size_t checks = 0;
      std::string failure;
      std::set<const c10::TensorImpl*> external, produced;

      static void collect(const c10::IValue& value, std::vector<const c10::IValue*>& out) {
        if (value.isTensor()) {
          out.push_back(&value);
        } else if (value.isList()) {
          for (const auto& element : value.toListRef()) collect(element, out);
        } else if (value.isTuple()) {
          for (const auto& element : value.toTupleRef().elements()) collect(element, out);
        }
      }
      bool stillNeeded(const torch::jit::Value* value, size_t now) const {
        for (const auto& use : value->uses()) {
          if (use.user->kind() == torch::jit::prim::Return) return true;
          if (position->at(use.user) >= now) return true;
        }
        return false;
      }
      void onNode(const torch::jit::Node& node, const ModuleCall*, const ValueView& inputs,
                  const MutableValueView& outputs) override {
        const size_t now = position->at(&node);
        std::set<const c10::TensorImpl*> needed;
        for (size_t i = 0; i < outputs.size(); ++i) {  // e.g. unpacked from a tuple
          std::vector<const c10::IValue*> tensors;
          collect(outputs[i], tensors);
          for (const auto* t : tensors) needed.insert(t->toTensor().unsafeGetTensorImpl());
        }
        for (const auto& [value, weaks] : seen) {
          if (!stillNeeded(value, now)) continue;
          for (const auto& weak : weaks) {
            if (auto strong = weak.lock()) needed.insert(strong.get());
          }
        }
        for (const auto& [value, weaks] : seen) {
          for (const auto& weak : weaks) {
            auto strong = weak.lock();
            if (strong && !needed.count(strong.get()) && failure.empty()) {
              failure = "%" + value->debugName() + " is alive at " + node.kind().toQualString() +
                        " after its last use";
            }
          }
        }
        ++checks;
        // Tensors that no tracked node produced (parameters, buffers, constants, graph inputs)
        // live outside the interpreter's registers; an op may hand one back unchanged.
        for (size_t i = 0; i < inputs.size(); ++i) {
          std::vector<const c10::IValue*> tensors;
          collect(inputs[i], tensors);
          for (const auto* t : tensors) {
            const auto* impl = t->toTensor().unsafeGetTensorImpl();
            if (!produced.count(impl)) external.insert(impl);
          }
        }
        for (size_t i = 0; i < outputs.size(); ++i) {
          std::vector<const c10::IValue*> tensors;
          collect(outputs[i], tensors);
          std::vector<Weak> weaks;
          for (const auto* t : tensors) {
            const auto* impl = t->toTensor().unsafeGetTensorImpl();
            if (external.count(impl)) continue;
            produced.insert(impl);
            weaks.emplace_back(t->toTensor().getIntrusivePtr());
          }
          if (!weaks.empty()) seen.emplace_back(node.output(i), std::move(weaks));
        }
      }
    } watcher;
    watcher.position = &position;
    model->interpreter->run(model->example_inputs, &watcher);
    EXPECT_GT(watcher.checks, 100u);
    EXPECT_EQ(watcher.failure, "") << name;
  }
}

TEST(Interpreter, IsDeterministicAndReentrant) {
  const auto model = loadModel(zooPath("bamba-tiny.pt"));
  const auto first = flattenTensors(model->interpreter->run(model->example_inputs));
  const auto second = flattenTensors(model->interpreter->run(model->example_inputs));
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(sameToFloat32Accuracy(first[i], second[i]));
}

// A model saved in bfloat16 or float16 (build/zoo-<dtype>) is computed in float32 from its 16-bit
// weights: it runs although LibTorch 1.13 has no float16 CPU kernel for addmm or layer_norm, its
// outputs are float32 and as close to float64 arithmetic on the same weights as float32 allows
// (a result rounded to 16 bits anywhere on the way would be off by 1e-3 or more), and its weights
// stay 16-bit: no float32 copy of the model is made.
class SixteenBitInterpreter
    : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(SixteenBitInterpreter, ComputesInFloat32FromTheSixteenBitWeights) {
  const auto [dtype, name] = GetParam();
  const auto model = loadModel(zooPath("../zoo-" + std::string(dtype) + "/" + name + ".pt"));
  const auto ours = flattenTensors(model->interpreter->run(model->example_inputs));
  const torch::jit::Module wide = toFloat64Module(model->module);
  const Interpreter truth(wide, toFloat64Graph(*model->graph), model->modules);
  std::vector<c10::IValue> inputs;
  for (const auto& input : model->example_inputs) inputs.push_back(toFloat64Value(input));
  const auto exact = flattenTensors(truth.run(inputs));
  ASSERT_EQ(ours.size(), exact.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    if (!exact[i].is_floating_point()) continue;
    EXPECT_EQ(ours[i].scalar_type(), c10::kFloat) << "output " << i;
    const double scale = exact[i].abs().max().item<double>();
    const double error = (ours[i].to(c10::kDouble) - exact[i]).abs().max().item<double>();
    EXPECT_LT(error, 1e-4 * std::max(scale, 1.0)) << "output " << i << " of " << name;
  }
  size_t sixteen_bit = 0;
  for (const auto& parameter : model->module.parameters()) {
    EXPECT_NE(parameter.scalar_type(), c10::kFloat);
    sixteen_bit +=
        parameter.scalar_type() == (std::string(dtype) == "float16" ? c10::kHalf : c10::kBFloat16);
  }
  EXPECT_GT(sixteen_bit, 0u);
}

INSTANTIATE_TEST_SUITE_P(Zoo, SixteenBitInterpreter,
                         ::testing::Combine(::testing::Values("bfloat16", "float16"),
                                            ::testing::Values("llama-tiny", "gpt2-tiny", "vit-tiny",
                                                              "bert-h96", "bamba-tiny",
                                                              "t5-encoder-tiny", "mixtral-tiny")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  testing::testName(std::get<1>(info.param));
                         });

// A linear whose 16-bit weight is large (a vocabulary projection) is computed a slice of output
// features at a time: the same values as the whole weight widened, in order, with its bias.
TEST(SixteenBitInterpreter, ALargeLinearIsComputedInSlicesWithTheSameValues) {
  torch::jit::Module module("LargeLinear");
  const at::Tensor weight = at::randn({4099, 2048}).mul(0.02).to(at::kBFloat16);  // 8.4M elements
  const at::Tensor bias = at::randn({4099}).to(at::kBFloat16);
  module.register_parameter("weight", weight, false);
  module.register_parameter("bias", bias, false);
  module.define("def forward(self, x):\n    return torch.linear(x, self.weight, self.bias)\n");
  const auto model = savedAndLoaded(module, "[1, 8, 2048]");
  const at::Tensor ours = flattenTensors(model->interpreter->run(model->example_inputs)).at(0);
  const at::Tensor x = model->example_inputs[0].toTensor();
  const at::Tensor whole =
      at::linear(x.to(at::kDouble), weight.to(at::kDouble), bias.to(at::kDouble));
  EXPECT_EQ(ours.scalar_type(), at::kFloat);
  ASSERT_EQ(ours.sizes().vec(), (std::vector<int64_t>{1, 8, 4099}));
  const double scale = whole.abs().max().item<double>();
  EXPECT_LT((ours.to(at::kDouble) - whole).abs().max().item<double>(), 1e-5 * scale);
}

// A weightless archive (the sweep's real geometries: each weight one stored zero expanded to its
// shape) is lowered, not run: what is computed from a weight is a shape, with the dtype and
// strides the CPU kernel would give it and no data (a dense copy of an 8B model's weights would
// take minutes); what is computed from the inputs alone keeps its values.
TEST(InterpreterWeightless, WeightDerivedValuesAreShapesAndInputsStayValues) {
  torch::jit::Module module("Weightless");
  module.register_parameter("weight", at::zeros({1}).expand({4096, 64}), false);
  module.register_buffer("scale", at::full({64}, 2.0));
  module.define(R"(
def forward(self, x):
    h = torch.linear(x, self.weight)
    return h.transpose(1, 2), (x * self.scale).sum(-1), h.size(-1)
)");
  const auto model = savedAndLoaded(module, "[1, 8, 64]");
  const auto outputs = model->interpreter->run(model->example_inputs);
  ASSERT_EQ(outputs.size(), 1u);
  const auto& results = outputs[0].toTupleRef().elements();
  const at::Tensor projected = results[0].toTensor();
  EXPECT_TRUE(projected.is_meta());
  EXPECT_EQ(projected.sizes().vec(), (std::vector<int64_t>{1, 4096, 8}));
  EXPECT_EQ(projected.strides().vec(), (std::vector<int64_t>{32768, 1, 4096}));  // a transpose
  EXPECT_EQ(projected.scalar_type(), at::kFloat);
  const at::Tensor summed = results[1].toTensor();
  ASSERT_FALSE(summed.is_meta());
  const at::Tensor x = model->example_inputs[0].toTensor();
  EXPECT_LT((summed - (x * 2.0).sum(-1)).abs().max().item<double>(), 1e-4);
  EXPECT_EQ(results[2].toInt(), 4096);
  // Running it for its values is refused, with the reason.
  try {
    requireWeights(*model, "run");
    ADD_FAILURE() << "a weightless archive was accepted for a run";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("stores no weights"), std::string::npos) << e.what();
  }

  // A model with real weights is computed as it always was, even with a zero-filled one.
  torch::jit::Module dense("Dense");
  dense.register_parameter("weight", at::zeros({4096, 64}), false);
  dense.define("def forward(self, x):\n    return torch.linear(x, self.weight)\n");
  const auto computed = savedAndLoaded(dense, "[1, 8, 64]");
  EXPECT_FALSE(
      flattenTensors(computed->interpreter->run(computed->example_inputs)).at(0).is_meta());
  EXPECT_NO_THROW(requireWeights(*computed, "run"));
}

TEST(Interpreter, WrongNumberOfInputsIsAUserError) {
  const auto model = loadModel(zooPath("gpt2-tiny.pt"));
  EXPECT_THROW(model->interpreter->run({}), UserError);
}

}  // namespace
}  // namespace stickler
