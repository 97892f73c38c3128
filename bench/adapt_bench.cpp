// What `stickler adapt` costs on a model of realistic size, against what it must do anyway: one
// CPU run of the model and one device run of the adapted model. A Llama-style decoder of about
// 480M parameters (hidden 2048, 8 layers, 32 heads of 64, 4 KV heads, intermediate 5632,
// vocabulary 32000, 128 tokens) is generated on first use with the zoo's own families (not part
// of the test run, never committed). Target: adapt at most 3x the two runs.
//
//   build/bench/adapt_bench [--profile P] [--rounds N] [--model PATH]
//
// Times are medians over interleaved rounds in this process (models loaded once, as an MCP
// session keeps them); peak memory is measured in a fresh process per activity, each loading
// what it needs.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
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

using stickler::bench::BenchContext;

struct Args {
  std::string profile = "spyre-2026";
  int rounds = 3;
  std::string model = std::string(stickler::bench::kBenchModelsDir) + "/llama-480m.pt";
};

Args parseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--profile" && i + 1 < argc) {
      args.profile = argv[++i];
    } else if (arg == "--rounds" && i + 1 < argc) {
      args.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--model" && i + 1 < argc) {
      args.model = argv[++i];
    }  // the other benchmarks' arguments (a zoo directory, --seconds) do not apply here
  }
  return args;
}

double seconds(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `work` in a fresh process and returns its peak resident memory in bytes (that of the
// largest process of its tree: device runs happen in worker processes of their own).
double peakMemory(const std::function<void()>& work) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    int status = 0;
    try {
      work();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "adapt_bench: %s\n", e.what());
      status = 1;
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  int status = 0;
  struct rusage usage {};
  ::wait4(child, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("a measured process failed");
  }
  return static_cast<double>(usage.ru_maxrss) * 1024;
}

int runBenchmark(int argc, char** argv) {
  const Args args = parseArgs(argc, argv);
  namespace fs = std::filesystem;
  if (!fs::exists(args.model)) {
    const std::string command =
        std::string(stickler::bench::kPython) + " " + stickler::bench::kSourceDir +
        "/bench/models/generate_large.py --out " + fs::path(args.model).parent_path().string() +
        " --only " + fs::path(args.model).stem().string();
    std::printf("generating %s (once; about a minute)\n", args.model.c_str());
    std::fflush(stdout);
    if (std::system(command.c_str()) != 0 || !fs::exists(args.model)) {
      throw std::runtime_error("could not generate " + args.model + " with: " + command);
    }
  }
  const std::string scratch =
      (fs::temp_directory_path() / ("adapt-bench-" + std::to_string(::getpid()))).string();
  fs::create_directories(scratch);
  const std::string adapted = scratch + "/adapted.pt";
  const stickler::Operation& run = stickler::operationNamed("run_model");
  const stickler::Operation& adapt = stickler::operationNamed("adapt_model");
  const json cpu_run = {{"model", args.model}, {"backend", "cpu"}};
  const json device_run = {{"model", adapted}, {"backend", "spyre-sim:" + args.profile}};
  const json adapting = {{"model", args.model}, {"profile", args.profile}};
  const stickler::Operation& revert = stickler::operationNamed("revert_adapter");
  const json reverting = {{"model", args.model}, {"all", true}};

  // The adapted model, saved for the baseline's device run (in a process of its own, so that
  // this one holds nothing yet when the memory of each activity is measured).
  peakMemory([&] {
    BenchContext context(scratch);
    json with_save = adapting;
    with_save["save"] = adapted;
    const json report = stickler::runOperation(adapt, with_save, context);
    if (report.value("verdict", "") != "pass") {
      throw std::runtime_error("the adapted model does not pass on " + args.profile + ": " +
                               report.value("verdict", ""));
    }
  });

  std::printf("adapt against one CPU run plus one device run, %s on spyre-sim:%s\n",
              fs::path(args.model).filename().c_str(), args.profile.c_str());
  const double cpu_memory = peakMemory([&] {
    BenchContext context(scratch);
    stickler::runOperation(run, cpu_run, context);
  });
  const double device_memory = peakMemory([&] {
    BenchContext context(scratch);
    stickler::runOperation(run, device_run, context);
  });
  const double adapt_memory = peakMemory([&] {
    BenchContext context(scratch);
    stickler::runOperation(adapt, adapting, context);
  });

  // Two sessions: adapt makes the adapted model the one its session runs, and the CPU run must
  // stay the original's.
  BenchContext runs(scratch);
  BenchContext adapts(scratch);
  std::vector<double> cpu_times, device_times, adapt_times;
  json last;
  for (int round = 0; round <= args.rounds; ++round) {  // round 0 loads the models and warms up
    const double cpu = seconds([&] { stickler::runOperation(run, cpu_run, runs); });
    const double device = seconds([&] { stickler::runOperation(run, device_run, runs); });
    const double adapt_time =
        seconds([&] { last = stickler::runOperation(adapt, adapting, adapts); });
    // The session's model is the adapted one now, and adapt never applies an adapter twice:
    // the next round adapts the original again (not timed).
    stickler::runOperation(revert, reverting, adapts);
    if (round == 0) continue;
    cpu_times.push_back(cpu);
    device_times.push_back(device);
    adapt_times.push_back(adapt_time);
  }
  const double cpu = stickler::bench::median(cpu_times);
  const double device = stickler::bench::median(device_times);
  const double adapt_time = stickler::bench::median(adapt_times);
  std::printf("%-34s %10.2f s\n", "one CPU run (run_model cpu)", cpu);
  std::printf("%-34s %10.2f s\n", "one device run of the adapted model", device);
  std::printf("%-34s %10.2f s  %.2fx the two runs (target: at most 3x)\n", "adapt", adapt_time,
              adapt_time / (cpu + device));
  for (const auto& application : last["adapters"]["applied"]) {
    const json& equivalence = application["equivalence"];
    std::printf("  %-28s %s, %zu module call(s), %d input draw(s)\n",
                application["adapter"].get<std::string>().c_str(),
                equivalence.value("scope", "").c_str(),
                equivalence.contains("modules") ? equivalence["modules"].size() : 0,
                equivalence.value("inputs_checked", 0));
  }
  const double baseline_memory = std::max(cpu_memory, device_memory);
  std::printf(
      "peak memory: adapt %.2f GB, the runs %.2f GB (CPU run %.2f GB, device run %.2f GB): "
      "%.2fx\n",
      adapt_memory / 1e9, baseline_memory / 1e9, cpu_memory / 1e9, device_memory / 1e9,
      adapt_memory / baseline_memory);
  fs::remove_all(scratch);
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
  return stickler::bench::benchMain("adapt_bench", runBenchmark, argc, argv);
}
