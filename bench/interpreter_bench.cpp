// The node interpreter against LibTorch's own module.forward on every zoo model, in the same
// run, and the interpreter's own cost per node on a graph of cheap scalar ops.
//
//   build/bench/interpreter_bench [ZOO_DIR] [--seconds S]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "bench/bench_paths.h"
#include "bench/bench_timing.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include "simulator/graph/loaded_model.h"

namespace {

using stickler::bench::timeInterleaved;

// A module whose forward is `count` integer additions: nearly free operators, so the time
// per node is the executor's own overhead.
torch::jit::Module scalarChain(int count) {
  std::string source = "def forward(self, x: int) -> int:\n";
  for (int i = 0; i < count; ++i) source += "    x = x + " + std::to_string(i % 7 + 1) + "\n";
  source += "    return x\n";
  torch::jit::Module module("ScalarChain");
  module.define(source);
  return module;
}

}  // namespace

static int runBenchmarks(int argc, char** argv) {
  const auto options = stickler::bench::parseBenchArgs(argc, argv, stickler::bench::kZooDir, "");
  const auto& zoo = options.zoo;
  const double seconds = options.seconds;
  const auto found = stickler::bench::zooIndex(zoo, "interpreter_bench");
  if (!found) return 2;
  const nlohmann::json& index = *found;
  c10::InferenceMode inference;  // both sides without autograd

  std::printf("Interpreter vs module.forward (median of interleaved runs, %.1f s per model)\n",
              seconds);
  std::printf("%-24s %6s %12s %12s %8s\n", "model", "nodes", "forward ms", "interp ms", "ratio");
  double log_sum = 0;
  int count = 0;
  for (const auto& entry : index.at("models")) {
    const auto model = stickler::loadModel(zoo + "/" + entry.at("file").get<std::string>());
    auto inputs = model->example_inputs;
    auto [forward, interp] = timeInterleaved([&] { model->module.forward(inputs); },
                                             [&] { model->interpreter->run(inputs); }, seconds);
    const double ratio = interp / forward;
    log_sum += std::log(ratio);
    ++count;
    std::printf("%-24s %6zu %12.3f %12.3f %7.3fx\n", entry.at("name").get<std::string>().c_str(),
                model->interpreter->stepCount(), forward * 1e3, interp * 1e3, ratio);
  }
  std::printf("geometric mean ratio: %.3fx (target: at most 1.05x)\n\n", std::exp(log_sum / count));

  constexpr int kNodes = 2000;
  auto chain = scalarChain(kNodes);
  auto graph = chain.get_method("forward").graph()->copy();
  stickler::ModuleTable modules;
  modules.add({.path = "", .class_name = "ScalarChain"});
  stickler::Interpreter interpreter(chain, graph, modules);
  std::vector<c10::IValue> args{c10::IValue(int64_t{1})};
  // The JIT's optimizer would fold the chain away; its plain interpreter is the fair baseline.
  torch::jit::GraphOptimizerEnabledGuard no_optimizer(false);
  if (interpreter.run(args)[0].toInt() != chain.forward(args).toInt()) {
    std::fprintf(stderr, "interpreter_bench: scalar chain results differ\n");
    return 1;
  }
  auto [jit, ours] =
      timeInterleaved([&] { chain.forward(args); }, [&] { interpreter.run(args); }, seconds);
  std::printf(
      "Per-node cost on %d integer additions: interpreter %.1f ns, TorchScript's "
      "interpreter (optimizer off) %.1f ns (ratio %.2fx; target: well under 1000 ns)\n",
      kNodes, ours / kNodes * 1e9, jit / kNodes * 1e9, ours / jit);
  return 0;
}

int main(int argc, char** argv) {
  return stickler::bench::benchMain("interpreter_bench", runBenchmarks, argc, argv);
}
