// Lockstep per-module comparison (stickler localize's numerics) against its baselines, in one
// run: time against one reference run plus one device run (target at most 1.3x), and the
// activation bytes held at once against storing every module's outputs.
//
//   build/bench/lockstep_bench [ZOO_DIR] [--seconds S] [--profile P]

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "bench/bench_paths.h"
#include "bench/bench_timing.h"

#include "simulator/backends/backend.h"
#include "simulator/compare/module_errors.h"

namespace {

using stickler::bench::timeInterleaved;

// Keeps every module call's float outputs, as a comparison that stores all intermediates would;
// counts the bytes it holds and the most any one call produced.
class StoreAll : public stickler::ExecutionObserver {
 public:
  void onModuleExit(const stickler::ModuleCall& /*call*/,
                    const stickler::MutableValueView& outputs) override {
    int64_t bytes = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].isTensor()) continue;
      const at::Tensor& tensor = outputs[i].toTensor();
      if (!at::isFloatingType(tensor.scalar_type())) continue;
      kept_.push_back(tensor.to(at::kFloat).clone());
      bytes += tensor.numel() * static_cast<int64_t>(sizeof(float));
    }
    total_ += bytes;
    calls_.push_back(bytes);
  }
  int64_t total() const { return total_; }
  // The most that lockstep holds at once: the reference's outputs of kLockstepDepth consecutive
  // module calls, queued ahead of the compared run.
  int64_t heldAtOnce() const {
    int64_t most = 0, window = 0;
    for (size_t i = 0; i < calls_.size(); ++i) {
      window += calls_[i];
      if (i >= stickler::kLockstepDepth) window -= calls_[i - stickler::kLockstepDepth];
      most = std::max(most, window);
    }
    return most;
  }

 private:
  std::vector<at::Tensor> kept_;
  int64_t total_ = 0;
  std::vector<int64_t> calls_;
};

int runBenchmarks(int argc, char** argv) {
  const auto args =
      stickler::bench::parseBenchArgs(argc, argv, stickler::bench::kZooDir, "spyre-2026-clean");
  const auto& zoo = args.zoo;
  const double seconds = args.seconds;
  const std::string& profile = args.profile;
  const auto found = stickler::bench::zooIndex(zoo, "lockstep_bench");
  if (!found) return 2;
  const nlohmann::json& index = *found;
  // One intra-op thread per run, as device workers run: the lockstep reference runs on a
  // thread of its own next to the device run.

  const auto sim = stickler::makeBackend(stickler::parseBackendSpec("spyre-sim:" + profile));

  std::printf("lockstep comparison on spyre-sim:%s (in process; medians of interleaved runs)\n",
              profile.c_str());
  std::printf("%-22s %12s %14s %7s %16s %16s %8s\n", "model", "ref+dev ms", "lockstep ms", "ratio",
              "held at once KB", "store-all KB", "memory");
  stickler::bench::GeometricMean time_ratio, memory_ratio;
  for (const auto& entry : index.at("models")) {
    const auto model = stickler::loadModel(zoo + "/" + entry.at("file").get<std::string>());
    const auto compiled = sim->compile(*model, {});
    if (!compiled->ok()) continue;
    const auto& inputs = model->example_inputs;
    stickler::RunOptions plain;
    plain.in_process = true;
    auto [baseline, lockstep] = timeInterleaved(
        [&] {
          model->interpreter->run(inputs, nullptr);
          compiled->run(inputs, plain);
        },
        [&] {
          // The reference runs on its own thread, in step with the device run.
          stickler::LockstepComparer comparer(*model->interpreter, inputs);
          stickler::RunOptions observed = plain;
          observed.observer = &comparer;
          compiled->run(inputs, observed);
        },
        seconds, 11, 2);
    StoreAll store;
    model->interpreter->run(inputs, &store);
    const double ratio = lockstep / baseline;
    // Lockstep holds a few module calls' reference outputs at a time, next to the device's own.
    const double memory =
        static_cast<double>(store.heldAtOnce()) / static_cast<double>(store.total());
    time_ratio.add(ratio);
    memory_ratio.add(memory);
    std::printf("%-22s %12.3f %14.3f %6.2fx %16.1f %16.1f %7.3fx\n",
                entry.at("name").get<std::string>().c_str(), baseline * 1e3, lockstep * 1e3, ratio,
                store.heldAtOnce() / 1024.0, store.total() / 1024.0, memory);
  }
  if (time_ratio.count == 0) {
    std::printf("no zoo model compiles on %s\n", profile.c_str());
    return 1;
  }
  std::printf(
      "geometric mean: lockstep numerics %.2fx one reference run plus one device run (target: at "
      "most 1.3x); activations held at once %.3fx of storing every module's\n",
      time_ratio.value(), memory_ratio.value());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return stickler::bench::benchMain("lockstep_bench", runBenchmarks, argc, argv);
}
