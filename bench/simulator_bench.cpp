// spyre-sim on a fault-free profile against the cpu backend on the same models, in one run:
// the cost of device numerics (rounding where values leave kernels, weights converted once),
// and, separately, of giving each device run to the model's host (a process that keeps the
// model loaded), against the same run in this process; and a worker's start, from the fork
// server and by exec.
//
//   build/bench/simulator_bench [ZOO_DIR] [--seconds S] [--profile P]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "bench/bench_paths.h"
#include "bench/bench_timing.h"

#include "simulator/backends/backend.h"
#include "simulator/interpreter/tensor_memory.h"
#include "simulator/support/blas_threads.h"
#include "simulator/workers/worker_main.h"
#include "simulator/workers/worker_process.h"
#include "tools/framework/worker_jobs.h"

namespace {

using stickler::bench::timeInterleaved;

// A worker's start, to its first answer: made by the fork server against exec'd
// (STICKLER_FORK_SERVER=0), interleaved. What every model host, sandbox worker and probe pays
// before its first job.
void workerStarts(double seconds) {
  const stickler::WireMessage nothing{{{"kind", "bench.no-such-job"}}, {}};
  auto start = [&] { stickler::runInFreshWorker("bench", nothing, 60); };
  auto [forked, execd] = timeInterleaved(
      start,
      [&] {
        ::setenv("STICKLER_FORK_SERVER", "0", 1);
        start();
        ::unsetenv("STICKLER_FORK_SERVER");
      },
      seconds, 5, 1);
  std::printf(
      "\na worker's start to its first answer: from the fork server %.1f ms, exec'd "
      "%.1f ms (%.3fx)\n",
      forked * 1e3, execd * 1e3, forked / execd);
}

int runBenchmarks(int argc, char** argv) {
  const auto args =
      stickler::bench::parseBenchArgs(argc, argv, stickler::bench::kZooDir, "spyre-2026-clean");
  const auto& zoo = args.zoo;
  const double seconds = args.seconds;
  const std::string& profile = args.profile;
  const auto found = stickler::bench::zooIndex(zoo, "simulator_bench");
  if (!found) return 2;
  const nlohmann::json& index = *found;
  const auto cpu = stickler::makeBackend(stickler::parseBackendSpec("cpu"));
  const auto sim = stickler::makeBackend(stickler::parseBackendSpec("spyre-sim:" + profile));

  std::printf("spyre-sim:%s against cpu (medians of interleaved runs; models that compile)\n",
              profile.c_str());
  std::printf("%-22s %10s %12s %8s %12s %14s\n", "model", "cpu ms", "sim ms", "vs cpu",
              "on host ms", "vs sim here");
  double log_sum = 0, log_sum_worker = 0;
  int count = 0;
  for (const auto& entry : index.at("models")) {
    const auto model = stickler::loadModel(zoo + "/" + entry.at("file").get<std::string>());
    const auto on_cpu = cpu->compile(*model, {});
    const auto on_sim = sim->compile(*model, {});
    if (!on_sim->ok()) continue;
    const auto& inputs = model->example_inputs;
    stickler::RunOptions here;
    here.in_process = true;
    auto [cpu_time, sim_time] = timeInterleaved([&] { on_cpu->run(inputs, {}); },
                                                [&] { on_sim->run(inputs, here); }, seconds, 11, 2);
    // The run as `stickler run` makes it: given to the model's host (kept loaded across runs).
    auto [sim_again, host_time] = timeInterleaved([&] { on_sim->run(inputs, here); },
                                                  [&] { on_sim->run(inputs, {}); }, seconds, 5, 2);
    const double ratio = sim_time / cpu_time;
    const double worker_ratio = host_time / sim_again;
    log_sum += std::log(ratio);
    log_sum_worker += std::log(worker_ratio);
    ++count;
    std::printf("%-22s %10.3f %12.3f %7.2fx %12.3f %13.2fx\n",
                entry.at("name").get<std::string>().c_str(), cpu_time * 1e3, sim_time * 1e3, ratio,
                host_time * 1e3, worker_ratio);
  }
  if (count == 0) {
    std::printf("no zoo model compiles on %s\n", profile.c_str());
    return 1;
  }
  std::printf(
      "geometric mean: simulated execution %.2fx the cpu run (target: at most 1.5x); "
      "the run on the model's host %.2fx the same run in process (target: at most 1.5x)\n",
      std::exp(log_sum / count), std::exp(log_sum_worker / count));
  workerStarts(seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // As the stickler binary: OpenBLAS on one thread, and device runs in model hosts (this binary
  // again, in worker mode).
  stickler::setUpTensorMemory();
  stickler::limitBlasThreads();
  stickler::registerWorkerJobs();
  if (const auto status = stickler::runWorkerIfAsked(argc, argv)) return *status;
  return stickler::bench::benchMain("simulator_bench", runBenchmarks, argc, argv);
}
