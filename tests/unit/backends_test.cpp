// Backends: the CPU references, CPU emulation of a device format, and the simulated device:
// its numerics, its faults, aborts in a worker, hybrid placements.
#include "simulator/backends/backend.h"

#include <gtest/gtest.h>

#include <cstring>

#include "simulator/backends/model_host_ahead.h"
#include "simulator/backends/model_host_client.h"
#include "simulator/compare/module_errors.h"
#include "simulator/interpreter/rounded_when_widened.h"
#include "simulator/interpreter/sixteen_bit.h"
#include "simulator/interpreter/widening_buffers.h"
#include "simulator/numerics/tensor_rounding.h"
#include "simulator/support/large_blocks.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using testing::zooPath;

BackendRun runOn(const LoadedModel& model, const std::string& backend_text,
                 Placement placement = {}, RunOptions options = {}) {
  const auto backend = makeBackend(parseBackendSpec(backend_text));
  const auto compiled = backend->compile(model, placement);
  EXPECT_TRUE(compiled->ok()) << backend_text;
  return compiled->run(model.example_inputs, options);
}

bool sameBytes(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

double cosine(const at::Tensor& a, const at::Tensor& b) {
  const auto x = a.to(at::kDouble).reshape({-1});
  const auto y = b.to(at::kDouble).reshape({-1});
  return ((x * y).sum() / (x.norm() * y.norm())).item<double>();
}

TEST(CpuBackends, CpuIsTheReferenceAndCpu64IsClose) {
  const auto model = loadModel(zooPath("llama-tiny.pt"));
  const auto reference = flattenTensors(model->example_outputs).at(0);
  const auto cpu = runOn(*model, "cpu");
  ASSERT_EQ(cpu.status, BackendRun::Status::kCompleted);
  EXPECT_TRUE(sameBytes(flattenTensors(cpu.outputs).at(0), reference));

  const auto wide = runOn(*model, "cpu64");
  const auto logits64 = flattenTensors(wide.outputs).at(0);
  EXPECT_EQ(logits64.scalar_type(), at::kDouble);  // the dtypes the graph names widened too
  EXPECT_FALSE(sameBytes(logits64.to(at::kFloat), reference));
  EXPECT_LT((logits64 - reference.to(at::kDouble)).abs().max().item<double>(), 1e-4);
}

TEST(EmulatedBackend, ValuesAreInTheFormatAndDeterministic) {
  const auto model = loadModel(zooPath("vit-tiny.pt"));
  const auto reference = flattenTensors(model->example_outputs);
  for (const std::string format : {"dl16", "fp16", "bf16"}) {
    const auto first = flattenTensors(runOn(*model, "cpu-emulated:" + format).outputs);
    const auto second = flattenTensors(runOn(*model, "cpu-emulated:" + format).outputs);
    const NumberFormat parsed = *formatFromName(format);
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_TRUE(sameBytes(first[i], second[i])) << format;
      EXPECT_TRUE(sameBytes(roundToFormat(first[i], parsed), first[i])) << format;  // representable
      EXPECT_FALSE(sameBytes(first[i], reference[i])) << format;
      EXPECT_GT(cosine(first[i], reference[i]), 0.999) << format;
    }
  }
  // bf16 (8 fraction bits) drifts more than DL16 (9), which drifts more than fp16 (10).
  auto error = [&](const std::string& format) {
    const auto out = flattenTensors(runOn(*model, "cpu-emulated:" + format).outputs).at(0);
    return (out - reference[0]).abs().mean().item<double>();
  };
  EXPECT_GT(error("bf16"), error("dl16"));
  EXPECT_GT(error("dl16"), error("fp16"));
}

TEST(SpyreSim, CleanProfilePassesWhereFusionChangesNumerics) {
  const auto model = loadModel(zooPath("vit-tiny.pt"));
  const auto reference = flattenTensors(model->example_outputs).at(0);
  const auto plain = flattenTensors(runOn(*model, "spyre-sim:spyre-2026-clean").outputs).at(0);
  const auto fused =
      flattenTensors(runOn(*model, "spyre-sim:" + testing::testProfile("fused-clean.json")).outputs)
          .at(0);
  EXPECT_GT(cosine(plain, reference), 0.999);
  EXPECT_GT(cosine(fused, reference), 0.999);
  EXPECT_FALSE(sameBytes(plain, fused));  // values stay fp32 inside fused kernels
  // The device's values are DL16 where they leave a kernel, and its runs repeat exactly.
  EXPECT_TRUE(sameBytes(roundToFormat(plain, NumberFormat::kDL16), plain));
  EXPECT_TRUE(
      sameBytes(flattenTensors(runOn(*model, "spyre-sim:spyre-2026-clean").outputs).at(0), plain));
}

// Models with integer and boolean buffers (GPT-2's causal mask, BERT's token type ids): the
// float64 backend widens the floating ones only.
TEST(CpuBackends, Cpu64KeepsIntegerAndBooleanBuffers) {
  for (const char* name : {"gpt2-tiny.pt", "bert-h96.pt"}) {
    const auto model = loadModel(zooPath(name));
    const auto wide = runOn(*model, "cpu64");
    ASSERT_EQ(wide.status, BackendRun::Status::kCompleted) << name;
    const auto reference = flattenTensors(model->example_outputs).at(0);
    EXPECT_LT(
        (flattenTensors(wide.outputs).at(0) - reference.to(at::kDouble)).abs().max().item<double>(),
        1e-4)
        << name;
  }
}

TEST(Rounding, HoldsExactlyJudgesEveryValueOfEverySlice) {
  const at::Tensor values = at::linspace(-100.0, 100.0, 200001);
  // bfloat16 has 8 bits of significand, DL16 10: every bfloat16 in DL16's range is a DL16 value.
  EXPECT_TRUE(holdsExactly(values.to(at::kBFloat16), NumberFormat::kDL16));
  EXPECT_FALSE(holdsExactly(values.to(at::kHalf), NumberFormat::kDL16));  // float16 has 11
  at::Tensor rounded = roundToFormat(values, NumberFormat::kDL16);
  EXPECT_TRUE(holdsExactly(rounded, NumberFormat::kDL16));
  rounded[200000] = 100.0 + 1.0 / 1024;  // in the last slice only
  EXPECT_FALSE(holdsExactly(rounded, NumberFormat::kDL16));
  EXPECT_TRUE(holdsExactly(values, NumberFormat::kFloat32));
}

TEST(Rounding, ASixteenBitTensorIsRoundedInPlaceWhereItChanges) {
  at::Tensor values = at::linspace(-100.0, 100.0, 200001).to(at::kBFloat16);
  values[7] = 1e-25;  // below DL16's range, where bfloat16 reaches
  values[150000] = -1e-30;
  const at::Tensor expected = roundToFormat(values, NumberFormat::kDL16).to(at::kBFloat16);
  at::Tensor copy = values.clone();
  ASSERT_TRUE(roundSixteenBitWhereChanged(copy, NumberFormat::kDL16));
  EXPECT_TRUE(copy.equal(expected));
  EXPECT_EQ(copy.ne(values).sum().item<int64_t>(), 2);  // the two it rounds, nothing else
  // float16 has a bit more than DL16: about half its values round, each to a float16 value.
  const at::Tensor half = at::linspace(-100.0, 100.0, 200001).to(at::kHalf);
  at::Tensor rounded = half.clone();
  ASSERT_TRUE(roundSixteenBitWhereChanged(rounded, NumberFormat::kDL16));
  EXPECT_TRUE(rounded.equal(roundToFormat(half, NumberFormat::kDL16).to(at::kHalf)));
  EXPECT_FALSE(rounded.equal(half));
  // float16's largest value rounds up past float16's range: refused, not wrapped.
  at::Tensor largest = at::full({4}, 65504.0, at::kHalf);
  EXPECT_FALSE(roundSixteenBitWhereChanged(largest, NumberFormat::kDL16));
}

// A bfloat16 weight with values below DL16's smallest cannot hold its own rounding: the device
// reads it through the rounding instead (rounded_when_widened.h), wherever it is widened.
TEST(Rounding, ARegisteredWeightIsRoundedWhereverItIsWidenedAndNothingElseIs) {
  at::Tensor weight = at::linspace(-1.0, 1.0, 4096).to(at::kBFloat16).view({64, 64});
  weight[3][5] = 1e-25;
  weight[60][1] = -3e-10;
  EXPECT_FALSE(roundSixteenBitWhereChanged(weight.clone(), NumberFormat::kDL16));
  const at::Tensor expected = roundToFormat(weight, NumberFormat::kDL16);
  ASSERT_EQ(expected.scalar_type(), at::kFloat);
  ASSERT_FALSE(expected.equal(weight.to(at::kFloat)));
  const at::Tensor device = weight.clone();  // the device's own tensor
  roundWhenWidened(device, NumberFormat::kDL16);
  EXPECT_TRUE(isRoundedWhenWidened(device));
  EXPECT_TRUE(isRoundedWhenWidened(device.t()));
  WideningBuffers buffers(c10::kFloat);
  buffers.operatorStarts();
  EXPECT_TRUE(buffers.widen(device).equal(expected));
  EXPECT_TRUE(buffers.widen(device.t()).equal(expected.t()));
  EXPECT_TRUE(widenSixteenBit(device.narrow(0, 60, 4)).toTensor().equal(expected.narrow(0, 60, 4)));
  // What the CPU reference reads is not the device's tensor, and is widened exactly.
  EXPECT_FALSE(isRoundedWhenWidened(weight));
  EXPECT_TRUE(buffers.widen(weight).equal(weight.to(at::kFloat)));
  stopRoundingWhenWidened(device);
  EXPECT_TRUE(buffers.widen(device).equal(weight.to(at::kFloat)));
}

// A float16 model runs on the device although LibTorch 1.13 has no float16 CPU kernels: it is
// computed in float32 from its weights, and what leaves the device is DL16.
TEST(SpyreSim, AFloat16ModelRunsInFloat32AndLeavesInDL16) {
  const auto model = loadModel(zooPath("../zoo-float16/vit-tiny.pt"));
  const auto reference = flattenTensors(model->example_outputs).at(0);
  EXPECT_EQ(reference.scalar_type(), at::kFloat);
  const auto run = runOn(*model, "spyre-sim:spyre-2026-clean");
  ASSERT_EQ(run.status, BackendRun::Status::kCompleted);
  const auto device = flattenTensors(run.outputs).at(0);
  EXPECT_EQ(device.scalar_type(), at::kFloat);
  EXPECT_TRUE(holdsExactly(device, NumberFormat::kDL16));
  EXPECT_FALSE(sameBytes(device, reference));
  EXPECT_GT(cosine(device, reference), 0.999);
}

TEST(SpyreSim, AFaultCorruptsItsModule) {
  const auto model = loadModel(zooPath("vit-tiny.pt"));
  const auto outputs = flattenTensors(
      runOn(*model, "spyre-sim:" + testing::testProfile("layernorm-after-add.json")).outputs);
  EXPECT_GT(at::isnan(outputs.at(0)).sum().item<int64_t>(), 0);
}

TEST(SpyreSim, ARuntimeAbortLeavesTheCallerAliveAndNamesTheModule) {
  const auto model = loadModel(zooPath("qwen2-hd128.pt"));
  const auto run = runOn(*model, "spyre-sim:" + testing::testProfile("abort-in-attention.json"));
  EXPECT_EQ(run.status, BackendRun::Status::kAborted);
  EXPECT_EQ(run.signal, SIGABRT);
  ASSERT_NE(run.module, nullptr);
  EXPECT_EQ(run.module->path, "model.layers.0.self_attn");
  EXPECT_EQ(run.module->class_name, "Qwen2Attention");
  ASSERT_NE(run.node, nullptr);
  EXPECT_EQ(run.node->kind(), torch::jit::aten::softmax);
  EXPECT_NE(run.device_log.find("Assertion"), std::string::npos);
  EXPECT_TRUE(run.outputs.empty());
  // ...and this process goes on: the same model runs again on a clean profile.
  EXPECT_EQ(runOn(*model, "spyre-sim:spyre-2026-clean").status, BackendRun::Status::kCompleted);
}

TEST(SpyreSim, HybridPlacementRunsOnlyChosenModulesOnTheDevice) {
  const auto model = loadModel(zooPath("qwen2-hd128.pt"));
  const std::string abort = "spyre-sim:" + testing::testProfile("abort-in-attention.json");
  // The aborting softmax stays on the CPU when only the MLP is on the device.
  const auto mlp_only = runOn(*model, abort, Placement{{"model.layers.0.mlp"}});
  EXPECT_EQ(mlp_only.status, BackendRun::Status::kCompleted);
  const auto logits = flattenTensors(mlp_only.outputs).at(0);
  const auto reference = flattenTensors(model->example_outputs).at(0);
  EXPECT_FALSE(sameBytes(logits, reference));  // the MLP's DL16 numerics show
  EXPECT_GT(cosine(logits, reference), 0.9999);
  EXPECT_EQ(runOn(*model, abort, Placement{{"model.layers.0.self_attn"}}).status,
            BackendRun::Status::kAborted);
}

// A model host lowers each placement itself, so that its caller need not: one that does not
// compile is an answer (blocked, with the number of blockers), not a failure, and the host
// serves the next placement.
TEST(SpyreSim, AModelHostSaysWhenAPlacementDoesNotCompile) {
  const auto model = loadModel(zooPath("gpt2-tiny.pt"));  // aten::pow and the 1000-wide lm_head
  const DeviceRunSpec whole{"spyre-sim:spyre-2025", {}, -1};
  const BackendRun blocked = runOnModelHost(*model, whole, model->example_inputs, {});
  EXPECT_EQ(blocked.status, BackendRun::Status::kBlocked);
  EXPECT_EQ(incompleteRunVerdict(blocked.status), RunVerdict::kBlocked);
  EXPECT_NE(blocked.message.find("does not compile for spyre-sim:spyre-2025"), std::string::npos)
      << blocked.message;
  EXPECT_NE(blocked.message.find("3 blockers"), std::string::npos) << blocked.message;
  EXPECT_TRUE(blocked.outputs.empty());

  Placement attention_only;
  attention_only.device_modules = {"transformer.h.0.attn"};
  const BackendRun ran = runOnModelHost(*model, {"spyre-sim:spyre-2025", attention_only, -1},
                                        model->example_inputs, {});
  EXPECT_EQ(ran.status, BackendRun::Status::kCompleted) << ran.message;
  EXPECT_FALSE(ran.outputs.empty());
}

// gpt2-tiny recorded from shapes, as a command line's diagnosis loads it before its reference
// run, with no model host left idle by another test (the pool's counts then are this test's).
std::shared_ptr<const LoadedModel> gpt2FromShapesWithNoHostIdle() {
  WorkerPool::modelHosts().endIdle();
  LoadOptions from_shapes;
  from_shapes.records_from_shapes = true;
  return loadModel(zooPath("gpt2-tiny.pt"), from_shapes);
}

// A model host started while its caller runs the model for its reference (model_host_ahead.h)
// serves the model's first device run: one host is made for both, and the run gives what a run
// in a host made after the reference gives.
TEST(SpyreSim, AModelHostStartedAheadServesTheFirstDeviceRun) {
  const std::shared_ptr<const LoadedModel> shaped = gpt2FromShapesWithNoHostIdle();
  ASSERT_TRUE(shaped->records_from_shapes);
  const size_t started = WorkerPool::modelHosts().stats().started;
  ModelHostAhead ahead = startModelHostAhead(shaped, nullptr);
  ASSERT_TRUE(ahead.started());
  const auto model = withExampleInputs(*shaped, shaped->example_inputs);  // the reference run
  Placement attention_only;
  attention_only.device_modules = {"transformer.h.0.attn"};
  const DeviceRunSpec spec{"spyre-sim:spyre-2025", attention_only, -1};
  const BackendRun ran = runOnModelHost(*model, spec, model->example_inputs, {});
  ASSERT_EQ(ran.status, BackendRun::Status::kCompleted) << ran.message;
  EXPECT_EQ(WorkerPool::modelHosts().stats().started, started + 1);

  WorkerPool::modelHosts().endIdle();
  const BackendRun again = runOnModelHost(*model, spec, model->example_inputs, {});
  ASSERT_EQ(again.status, BackendRun::Status::kCompleted) << again.message;
  EXPECT_EQ(WorkerPool::modelHosts().stats().started, started + 2);
  EXPECT_TRUE(sameBytes(flattenTensors(ran.outputs).at(0), flattenTensors(again.outputs).at(0)));
}

// A host made ahead with records that are not its caller's (here: the caller ran other inputs)
// would lower the model otherwise than its caller: it is ended, and the run makes its own.
TEST(SpyreSim, AModelHostMadeAheadWithOtherRecordsIsEndedNotUsed) {
  const std::shared_ptr<const LoadedModel> shaped = gpt2FromShapesWithNoHostIdle();
  const size_t started = WorkerPool::modelHosts().stats().started;
  ModelHostAhead ahead = startModelHostAhead(shaped, nullptr);
  const at::Tensor ids = shaped->example_inputs.at(0).toTensor();
  const auto shorter = withExampleInputs(*shaped, {ids.narrow(1, 0, ids.size(1) - 4)});
  ASSERT_NE(hostFactsOf(*shorter).records, hostFactsOf(*shaped).records);
  ASSERT_EQ(hostFactsOf(*shorter).key, hostFactsOf(*shaped).key);  // the same recipe's host

  Placement attention_only;
  attention_only.device_modules = {"transformer.h.0.attn"};
  const BackendRun ran = runOnModelHost(*shorter, {"spyre-sim:spyre-2025", attention_only, -1},
                                        shorter->example_inputs, {});
  ASSERT_EQ(ran.status, BackendRun::Status::kCompleted) << ran.message;
  EXPECT_EQ(WorkerPool::modelHosts().stats().started, started + 2);
  EXPECT_EQ(flattenTensors(ran.outputs).at(0).sizes(),
            flattenTensors(shorter->example_outputs).at(0).sizes());
  EXPECT_EQ(WorkerPool::modelHosts().stats().idle, 1u);  // the run's own, not the one made ahead
}

// A host made ahead that no run took over is ended with the object that started it: it holds a
// model recorded from shapes that no caller confirmed.
TEST(SpyreSim, AModelHostMadeAheadAndNeverUsedIsEnded) {
  const std::shared_ptr<const LoadedModel> shaped = gpt2FromShapesWithNoHostIdle();
  const size_t started = WorkerPool::modelHosts().stats().started;
  { const ModelHostAhead ahead = startModelHostAhead(shaped, nullptr); }
  EXPECT_EQ(WorkerPool::modelHosts().stats().started, started + 1);
  EXPECT_EQ(WorkerPool::modelHosts().stats().idle, 0u);
  EXPECT_EQ(WorkerPool::modelHosts().stats().busy, 0u);
}

// The caller waits while its model host runs: the freed blocks it keeps for its own next
// allocations are given back first, not held beside the host's model for the whole run.
TEST(SpyreSim, ACallerGivesBackItsKeptBlocksBeforeWaitingOnItsModelHost) {
  const auto model = loadModel(zooPath("gpt2-tiny.pt"));
  {
    at::Tensor block = at::empty({int64_t{4} << 20}, at::kByte);  // a large block, then freed
    block.fill_(1);
  }
  ASSERT_GE(largeBlocksKept(), size_t{4} << 20);
  Placement attention_only;
  attention_only.device_modules = {"transformer.h.0.attn"};
  const BackendRun ran = runOnModelHost(*model, {"spyre-sim:spyre-2025", attention_only, -1},
                                        model->example_inputs, {});
  ASSERT_EQ(ran.status, BackendRun::Status::kCompleted) << ran.message;
  EXPECT_EQ(largeBlocksKept(), 0u);  // the tiny model's outputs are small blocks
}

// A run compared in lockstep in its model host sends the comparison back with its outputs:
// one entry per module call compared, and the operators that turned values non-finite.
TEST(SpyreSim, ALockstepRunInItsHostSendsItsComparisonBack) {
  const auto model = loadModel(zooPath("vit-tiny.pt"));
  RunOptions lockstep;
  lockstep.lockstep = true;
  const BackendRun clean = runOn(*model, "spyre-sim:spyre-2026-clean", {}, lockstep);
  ASSERT_EQ(clean.status, BackendRun::Status::kCompleted);
  ASSERT_TRUE(clean.lockstep.has_value());
  const size_t calls = model->interpreter->moduleCalls().size();
  EXPECT_GT(clean.lockstep->modules.size(), calls / 2);
  for (const ModuleErrors& errors : clean.lockstep->modules) {
    EXPECT_GE(errors.call, 0);
    EXPECT_LT(errors.call, static_cast<int64_t>(calls));
    EXPECT_LT(errors.rel_l2, 0.05);  // DL16 numerics, no fault
  }
  EXPECT_TRUE(clean.lockstep->non_finite.empty());
  EXPECT_FALSE(runOn(*model, "spyre-sim:spyre-2026-clean").lockstep.has_value());  // not asked

  const BackendRun faulty =
      runOn(*model, "spyre-sim:" + testing::testProfile("layernorm-after-add.json"), {}, lockstep);
  ASSERT_TRUE(faulty.lockstep.has_value());
  ASSERT_FALSE(faulty.lockstep->non_finite.empty());
  EXPECT_TRUE(faulty.lockstep->non_finite.front().nan);
  EXPECT_GT(faulty.lockstep->non_finite.front().elements, 0);
}

TEST(SpyreSim, InProcessRunsThrowInsteadOfAborting) {
  const auto model = loadModel(zooPath("qwen2-hd128.pt"));
  RunOptions options;
  options.in_process = true;
  const auto backend =
      makeBackend(parseBackendSpec("spyre-sim:" + testing::testProfile("abort-in-attention.json")));
  const auto compiled = backend->compile(*model, {});
  EXPECT_THROW(compiled->run(model->example_inputs, options), std::exception);
}

TEST(SpyreSim, IntegersNarrowToInt32) {
  const char* card =
      R"({"inputs": [{"name": "x", "shape": [4], "dtype": "int64", "kind": "integer", "range": [1, 2]}]})";
  const auto model = loadModel(testing::writeScriptedModel(
      "BigIntegers", "def forward(self, x):\n    return x * 4294967296 + 5\n", card));
  const auto cpu = flattenTensors(model->example_outputs).at(0);
  const auto device = flattenTensors(runOn(*model, "spyre-sim:spyre-2026-clean").outputs).at(0);
  EXPECT_TRUE(at::equal(device, cpu.to(at::kInt).to(at::kLong)));  // 2^32 wraps away
  EXPECT_FALSE(at::equal(device, cpu));
}

}  // namespace
}  // namespace stickler
