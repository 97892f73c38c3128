// What diagnosing costs over plainly running, in one run each, through the operation table as
// the CLI and the MCP server call it (device runs in worker processes, models kept loaded):
//   - mode run: `diagnose --mode run` against `run` on the same profile, for the models that
//     complete there (target: at most 1.05x: pinning an abort costs nothing until one happens);
//   - mode compile: `diagnose` (every blocker, the adapters that clear each, a checked repro
//     bundle per distinct blocker with its captured activations) against `run`'s plain attempt
//     on the device, which stops at "blocked", for the models blocked there.
//
//   build/bench/diagnose_bench [ZOO_DIR] [--seconds S] [--profile P]
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "bench/bench_context.h"
#include "bench/bench_timing.h"
#include "simulator/workers/worker_main.h"
#include "tools/operation_table.h"
#include "tools/worker_jobs.h"

namespace {

using nlohmann::json;
using stickler::bench::timeInterleaved;

using stickler::bench::BenchContext;

int runBenchmarks(int argc, char** argv) {
  const auto args = stickler::bench::parseBenchArgs(argc, argv, STICKLER_ZOO_DIR, "spyre-2025");
  const auto index = stickler::bench::zooIndex(args.zoo, "diagnose_bench");
  if (!index) return 2;
  const std::string scratch =
      (std::filesystem::temp_directory_path() / ("diagnose-bench-" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(scratch);
  BenchContext context(scratch);
  const stickler::Operation& run = stickler::operationNamed("run_model");
  const stickler::Operation& diagnose = stickler::operationNamed("diagnose_model");

  std::printf("diagnose against a plain device run on spyre-sim:%s (medians of interleaved runs)\n",
              args.profile.c_str());
  std::printf("%-22s %-8s %12s %14s %7s %8s\n", "model", "mode", "run ms", "diagnose ms", "ratio",
              "bundles");
  stickler::bench::GeometricMean run_mode, compile_mode;
  for (const auto& entry : index->at("models")) {
    const std::string model = args.zoo + "/" + entry.at("file").get<std::string>();
    const json plain = {{"model", model}, {"backend", "spyre-sim:" + args.profile}};
    const json first = stickler::runOperation(run, plain, context);
    const bool blocked =
        first.value("verdict", "") == "blocked" ||
        (first.contains("compile") && first["compile"].value("status", "") != "ok");
    if (!blocked && (!first.contains("run") || first["run"].value("status", "") != "completed")) {
      continue;  // aborted or hung: the overhead is not the question there
    }
    const json diagnosis = {{"model", model},
                            {"profile", args.profile},
                            {"mode", blocked ? "compile" : "run"},
                            {"bundle_dir", scratch + "/repros"}};
    size_t bundles = 0;
    auto [baseline, diagnosed] = timeInterleaved(
        [&] { stickler::runOperation(run, plain, context); },
        [&] {
          bundles = stickler::runOperation(diagnose, diagnosis, context).value("repro_bundles", 0);
        },
        args.seconds, 5, 1);
    const double ratio = diagnosed / baseline;
    (blocked ? compile_mode : run_mode).add(ratio);
    std::printf("%-22s %-8s %12.2f %14.2f %6.2fx %8zu\n",
                entry.at("name").get<std::string>().c_str(), blocked ? "compile" : "run",
                baseline * 1e3, diagnosed * 1e3, ratio, bundles);
  }
  std::filesystem::remove_all(scratch);
  std::printf(
      "geometric mean: mode run %.3fx a plain device run (target: at most 1.05x; %d models); "
      "mode compile %.2fx a plain device attempt (%d blocked models)\n",
      run_mode.value(), run_mode.count, compile_mode.value(), compile_mode.count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Its device runs go to model hosts: this binary again, in worker mode.
  stickler::registerWorkerJobs();
  if (const auto status = stickler::runWorkerIfAsked(argc, argv)) return *status;
  return stickler::bench::benchMain("diagnose_bench", runBenchmarks, argc, argv);
}
