// A coverage sweep over the full target set (tests/zoo/targets.py: thousands of zoo variants and
// the weightless real geometries), with --jobs 2: models per minute, and the per-model cost of
// the sweep against a bare `stickler run` of the same models (the baseline, measured in the same
// run on a sample), in wall time and in peak memory.
//
//   build/bench/sweep_bench [TARGETS_DIR] [--limit N] [--sample K] [--jobs J]
//
// TARGETS_DIR (default build/targets) is generated when it has no index.json (about 5 minutes
// and 8 GB for 3000 variants); --limit sweeps only the first N models of it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_paths.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `command` in `cwd` through the shell: its wall seconds, exit status, and the peak
// resident set (KiB) of the largest process in its tree (wait4's rusage covers the processes
// the command waited for: the sweep's workers, a run's device process).
struct Timed {
  double seconds = 0;
  int status = 0;
  long peak_kib = 0;
};

Timed run(const std::string& cwd, const std::string& command) {
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string line = "cd " + quote(cwd) + " && " + command;
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int raw = 0;
  rusage usage{};
  ::wait4(pid, &raw, 0, &usage);
  return {std::chrono::duration<double>(Clock::now() - start).count(),
          WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, usage.ru_maxrss};
}

json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

}  // namespace

int main(int argc, char** argv) {
  std::string targets = std::string(stickler::bench::kBuildDir) + "/targets";
  size_t limit = 0;
  size_t sample = 20;
  size_t jobs = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--limit" && i + 1 < argc) {
      limit = std::stoul(argv[++i]);
    } else if (arg == "--sample" && i + 1 < argc) {
      sample = std::stoul(argv[++i]);
    } else if (arg == "--jobs" && i + 1 < argc) {
      jobs = std::stoul(argv[++i]);
    } else {
      targets = arg;
    }
  }
  if (!fs::exists(targets + "/index.json")) {
    std::printf("generating the target set into %s (once; minutes)\n", targets.c_str());
    const std::string generate = std::string(stickler::bench::kPython) + " " +
                                 stickler::bench::kSourceDir + "/tests/zoo/targets.py --out " +
                                 quote(targets) + " --jobs 2";
    if (std::system(generate.c_str()) != 0) {
      std::fprintf(stderr, "sweep_bench: generating the target set failed\n");
      return 1;
    }
  }
  const json index = readJson(targets + "/index.json");
  std::vector<std::string> models;
  std::vector<std::string> variants;
  std::vector<std::string> reals;  // weightless real geometries: the sweep only lowers them
  for (const json& model : index["models"]) {
    if (limit > 0 && models.size() >= limit) break;
    const std::string path = fs::absolute(targets + "/" + model["file"].get<std::string>());
    models.push_back(path);
    (model.value("kind", "variant") == "real" ? reals : variants).push_back(path);
  }
  const std::string work =
      fs::temp_directory_path() / ("stickler-sweep-bench-" + std::to_string(::getpid()));
  fs::create_directories(work);
  {
    std::ofstream list(work + "/models.txt");
    for (const std::string& model : models) list << model << "\n";
  }
  const std::string binary = quote(stickler::bench::kSticklerBinary);

  // The baseline: bare runs of a sample of the variants, one at a time.
  std::vector<std::string> sampled;
  for (size_t i = 0; i < sample && !variants.empty(); ++i) {
    sampled.push_back(variants[i * variants.size() / sample]);
  }
  std::map<std::string, double> bare;
  double bare_total = 0;
  long bare_peak = 0;
  for (const std::string& model : sampled) {
    const Timed timed = run(
        work, binary + " run " + quote(model) + " --backend spyre-sim:spyre-2026 >/dev/null 2>&1");
    bare[model] = timed.seconds;
    bare_total += timed.seconds;
    bare_peak = std::max(bare_peak, timed.peak_kib);
  }

  // The real geometries' baseline: a bare `stickler check` (lowering, as the sweep does for
  // them), each in a process of its own; the largest sets the memory any sweep of them needs.
  std::map<std::string, double> bare_check;
  double check_total = 0;
  long check_peak = 0;
  for (const std::string& model : reals) {
    const Timed timed =
        run(work, binary + " check " + quote(model) + " --profile spyre-2026 >/dev/null 2>&1");
    bare_check[model] = timed.seconds;
    check_total += timed.seconds;
    check_peak = std::max(check_peak, timed.peak_kib);
  }

  std::printf("sweeping %zu models (%zu variants) with --jobs %zu ...\n", models.size(),
              variants.size(), jobs);
  std::fflush(stdout);
  const Timed swept =
      run(work, binary + " sweep --models models.txt --profile spyre-2026 --out out --jobs " +
                    std::to_string(jobs) + " --json > sweep-output.json");
  if (swept.status != 0) {
    std::fprintf(stderr, "sweep_bench: the sweep exited %d\n", swept.status);
    return 1;
  }
  const json document = readJson(work + "/out/sweep.json");
  double sampled_in_sweep = 0;
  double reals_in_sweep = 0;
  for (const json& entry : document["models"]) {
    if (bare.count(entry["model"]) > 0) sampled_in_sweep += entry.value("seconds", 0.0);
    if (bare_check.count(entry["model"]) > 0) reals_in_sweep += entry.value("seconds", 0.0);
  }
  const double per_model_wall = swept.seconds / models.size();
  const double bare_mean = sampled.empty() ? 0 : bare_total / sampled.size();
  std::printf("sweep: %zu models in %.1f s: %.1f models per minute (--jobs %zu)\n", models.size(),
              swept.seconds, 60.0 * models.size() / swept.seconds, jobs);
  std::printf("  coverage: %s compile with adapters, %s pass end to end\n",
              document["summary"]["covered"].dump().c_str(),
              document["summary"]["passing"].dump().c_str());
  if (!sampled.empty()) {
    std::printf("baseline: a bare `stickler run` of %zu sampled variants: %.3f s each\n",
                sampled.size(), bare_mean);
    std::printf(
        "ratio, per-model wall time in the sweep / a bare run:            %.2fx (target <= "
        "1.2x)\n",
        per_model_wall / bare_mean);
    std::printf(
        "ratio, the same models' worker time in the sweep / their bare runs: %.2fx "
        "(one core each; the sweep also adapts, checks equivalence and compiles twice)\n",
        sampled_in_sweep / bare_total);
  }
  if (!reals.empty()) {
    std::printf(
        "real geometries (%zu, lowered only): their worker time in the sweep / a bare "
        "`stickler check` of each: %.2fx (%.1f s / %.1f s; the sweep also applies "
        "adapters and lowers twice)\n",
        reals.size(), reals_in_sweep / check_total, reals_in_sweep, check_total);
    std::printf(
        "peak memory: the sweep's largest process / the largest bare check: %.2fx "
        "(%ld / %ld MiB)\n",
        check_peak == 0 ? 0.0 : 1.0 * swept.peak_kib / check_peak, swept.peak_kib >> 10,
        check_peak >> 10);
  } else {
    std::printf(
        "peak memory: the sweep's largest process / the largest bare run: %.2fx "
        "(%ld / %ld MiB)\n",
        bare_peak == 0 ? 0.0 : 1.0 * swept.peak_kib / bare_peak, swept.peak_kib >> 10,
        bare_peak >> 10);
  }
  fs::remove_all(work);
  return 0;
}
