// What diagnosing costs over plainly running, in one run each, through the operation table as
// the CLI and the MCP server call it (device runs in worker processes, models kept loaded):
//   - mode run: `diagnose --mode run` against `run` on the same profile, for the models that
//     complete there (target: at most 1.05x: pinning an abort costs nothing until one happens);
//   - mode compile: `diagnose` (every blocker, the adapters that clear each, a checked repro
//     bundle per distinct blocker with its captured activations) against `run`'s plain attempt
//     on the device, which stops at "blocked", for the models blocked there;
//   - `localize` against the device runs it makes (target: at most 1.2x).
//
//   build/bench/diagnose_bench [ZOO_DIR] [--seconds S] [--profile P] [--localize-only]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "bench/bench_context.h"
#include "bench/bench_paths.h"
#include "bench/bench_timing.h"
#include "simulator/interpreter/tensor_memory.h"
#include "simulator/support/blas_threads.h"
#include "simulator/workers/worker_main.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/worker_jobs.h"

namespace {

using nlohmann::json;
using stickler::bench::timeInterleaved;

using stickler::bench::BenchContext;

// A profile whose only fault makes `module`'s outputs three times too large (as the tests'
// fault profiles do).
std::string wrongScaleProfile(const std::string& scratch, const std::string& module) {
  const std::string path = scratch + "/fault-" + module + ".json";
  const json profile = {{"version", 1},
                        {"extends", "spyre-2025-clean"},
                        {"name", "bench-wrong-scale"},
                        {"description", "One module's outputs come out three times too large."},
                        {"faults",
                         {{{"id", "wrong-scale"},
                           {"match", {{"module", module}}},
                           {"effect", {{"kind", "wrong_scale"}, {"factor", 3.0}}}}}}};
  std::ofstream(path) << profile.dump(2);
  return path;
}

// `localize` against the device runs it makes: its whole time over the time its runs took as it
// waited for them (their model host's part included). What is left is localization's own work:
// thresholds (cached after the first call, as in a session), the lockstep comparison, lowering
// each placement, comparing outputs. Models kept loaded and hosts warm, as in a session.
void localizeAgainstItsRuns(const std::string& zoo, const std::string& scratch,
                            BenchContext& context, double seconds) {
  const stickler::Operation& localize = stickler::operationNamed("localize_divergence");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bert-tiny", "encoder.layer.1.intermediate.dense"},
      {"gpt2-tiny", "transformer.h.0.mlp.c_proj"},
      {"llama-tiny", "model.layers.1.mlp.down_proj"},
      {"qwen2-hd128", "model.layers.0.mlp.down_proj"},
      {"vit-tiny", "encoder.layer.1.attention.output.dense"}};
  std::printf("\nlocalize against the device runs it makes (a wrong-scale fault in one module)\n");
  std::printf("%-22s %8s %14s %14s %7s %10s\n", "model", "runs", "localize ms", "its runs ms",
              "ratio", "repro ms");
  stickler::bench::GeometricMean ratios;
  for (const auto& [name, module] : cases) {
    // The reproducer runs the culprit's region, not the model: timed apart below.
    const json input = {{"model", zoo + "/" + name + ".pt"},
                        {"profile", wrongScaleProfile(scratch, module)},
                        {"adapt", true},
                        {"repro", false}};
    stickler::runOperation(localize, input, context);  // thresholds cached, host warm
    std::vector<double> totals, in_runs;
    size_t runs = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (totals.size() < 3 || std::chrono::steady_clock::now() < until) {
      const auto start = std::chrono::steady_clock::now();
      const json report = stickler::runOperation(localize, input, context);
      totals.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      double sum = 0;
      for (const json& run : report.value("runs", json::array())) sum += run.value("seconds", 0.0);
      in_runs.push_back(sum);
      runs = report.value("runs", json::array()).size();
    }
    std::sort(totals.begin(), totals.end());
    std::sort(in_runs.begin(), in_runs.end());
    const double total = totals[totals.size() / 2];
    const double device = in_runs[in_runs.size() / 2];
    ratios.add(total / device);
    json with_repro = input;
    with_repro["repro"] = true;
    with_repro["bundle_dir"] = scratch + "/repros";
    const json reproduced = stickler::runOperation(localize, with_repro, context);
    const double repro = reproduced.value("repro", json::object()).value("seconds", 0.0);
    std::printf("%-22s %8zu %14.2f %14.2f %6.2fx %10.1f\n", name.c_str(), runs, total * 1e3,
                device * 1e3, total / device, repro * 1e3);
  }
  std::printf("geometric mean: localize %.2fx the device runs it makes (target: at most 1.2x)\n",
              ratios.value());
}

int runBenchmarks(int argc, char** argv) {
  // --localize-only: the last table alone.
  std::vector<char*> rest(argv, argv + argc);
  const auto flag = std::find_if(rest.begin(), rest.end(), [](const char* arg) {
    return std::string(arg) == "--localize-only";
  });
  const bool localize_only = flag != rest.end();
  if (localize_only) rest.erase(flag);
  const auto args = stickler::bench::parseBenchArgs(static_cast<int>(rest.size()), rest.data(),
                                                    stickler::bench::kZooDir, "spyre-2025");
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
    if (localize_only) break;
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
  std::printf(
      "geometric mean: mode run %.3fx a plain device run (target: at most 1.05x; %d models); "
      "mode compile %.2fx a plain device attempt (%d blocked models)\n",
      run_mode.value(), run_mode.count, compile_mode.value(), compile_mode.count);
  localizeAgainstItsRuns(args.zoo, scratch, context, args.seconds);
  std::filesystem::remove_all(scratch);
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
  return stickler::bench::benchMain("diagnose_bench", runBenchmarks, argc, argv);
}
