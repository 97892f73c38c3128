#include "simulator/diagnose/repro_bundle.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include "simulator/backends/backend.h"
#include "simulator/compare/output_comparison.h"
#include "simulator/device/device_profile.h"
#include "simulator/diagnose/repro_region.h"
#include "simulator/faults/fault_match.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"
#include "simulator/graph/node_info.h"
#include "simulator/lowering/lowering.h"
#include "simulator/support/errors.h"
#include "simulator/support/phase_times.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

// What the region read from outside on the model's example inputs (their first execution).
// Thrown by BoundaryCapture once it holds every value: the rest of the model's run would
// compute nothing it keeps (at 8B parameters, a whole CPU run for a region in the first layer).
struct BoundaryCaptured {};

class BoundaryCapture : public ExecutionObserver {
 public:
  BoundaryCapture(const std::unordered_set<const Node*>& within,
                  const std::vector<const Value*>& boundary)
      : within_(within) {
    for (size_t i = 0; i < boundary.size(); ++i) slots_[boundary[i]] = i;
    values_.resize(boundary.size());
    captured_.resize(boundary.size(), false);
  }
  void beforeNode(const Node& node, const ModuleCall* /*module*/,
                  const NodeInputs& inputs) override {
    if (!within_.count(&node)) return;
    for (size_t i = 0; i < inputs.size() && i < node.inputs().size(); ++i) {
      auto slot = slots_.find(node.input(i));
      if (slot == slots_.end() || captured_[slot->second]) continue;
      values_[slot->second] = detached(inputs[i]);
      captured_[slot->second] = true;
      ++captured_count_;
    }
    if (captured_count_ == values_.size()) throw BoundaryCaptured{};
  }
  bool complete() const { return captured_count_ == values_.size(); }
  const std::vector<c10::IValue>& values() const { return values_; }

 private:
  static c10::IValue detached(const c10::IValue& value) {
    if (value.isTensor()) return value.toTensor().detach().clone();
    return value;
  }
  const std::unordered_set<const Node*>& within_;
  std::unordered_map<const Value*, size_t> slots_;
  std::vector<c10::IValue> values_;
  std::vector<bool> captured_;
  size_t captured_count_ = 0;
};

// What a repro must show to count: the same blocker, or the same run-time failure in the same
// operator.
struct Expectation {
  std::string rule;       // a blocker's rule; "" for a run-time failure
  std::string status;     // a run-time failure: aborted, timed_out, failed
  std::string op;         // a numerical failure from a module: its class
  bool numerics = false;  // a numerical failure: the verdict fails, and passes without faults
  double margin = 0;      // numerics: the thresholds' margin
};

// The archive alone on the profile: what it shows, and whether that is the expected failure.
std::pair<bool, std::string> check(const std::string& archive, const Expectation& expected,
                                   const DeviceProfile& profile, double timeout_seconds) {
  const auto alone = loadModel(archive);
  if (expected.rule == kCompilerErrorRule) {
    const LoweringResult lowered = lower(*alone, profile, Placement{});
    if (!lowered.compiler_error) {
      return {false, lowered.blockers.empty() ? "compiles" : "blocked, no compiler error"};
    }
    const std::string op = lowered.compiler_error_node->kind().toQualString();
    return {op == expected.op, "the compiler fails in " + op + ": " + *lowered.compiler_error};
  }
  if (!expected.rule.empty()) {
    const LoweringResult lowered = lower(*alone, profile, Placement{});
    std::string observed = lowered.blockers.empty() ? "compiles" : "";
    bool same = false;
    for (const Blocker& blocker : lowered.blockers) {
      const std::string seen = blocker.rule + " on " + blocker.node->kind().toQualString();
      observed += (observed.empty() ? "" : "; ") + seen;
      same = same ||
             (blocker.rule == expected.rule && blocker.node->kind().toQualString() == expected.op);
    }
    return {same, observed};
  }
  const auto backend = makeBackend(spyreSimBackend(profile.path));
  const auto compiled = backend->compile(*alone, Placement{});
  if (!compiled->ok()) return {false, "blocked"};
  RunOptions options;
  options.timeout_seconds = timeout_seconds;
  const BackendRun run = compiled->run(alone->example_inputs, options);
  const std::string status = runStatusName(run.status);
  const std::string op = run.node ? run.node->kind().toQualString() : "";
  return {status == expected.status && op == expected.op, status + (op.empty() ? "" : " in " + op)};
}

// A CPU backend's outputs for the archive on its example inputs.
std::vector<at::Tensor> cpuOutputs(const LoadedModel& alone, const BackendSpec& spec) {
  const BackendRun run =
      makeBackend(spec)->compile(alone, Placement{})->run(alone.example_inputs, RunOptions{});
  if (run.status != BackendRun::Status::kCompleted) {
    throw UserError("the repro did not run on " + spec.text + ": " + run.message);
  }
  return flattenTensors(run.outputs);
}

std::string numberText(std::optional<double> value) {
  if (!value) return "not finite";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", *value);
  return text;
}

// Judges each floating output of the saved archive as an activation: its tolerance is the
// thresholds' rule on these inputs (margin x the emulated format's error, at least the unit
// roundoff). Returns the pickled (fp32, float64) reference outputs for the archive.
std::string judgeAsActivations(const std::string& archive, const DeviceProfile& profile,
                               double margin, ModelCard& card, NumericsReproCheck& check) {
  const auto alone = loadModel(archive);
  const std::vector<at::Tensor> fp32 = flattenTensors(alone->example_outputs);
  BackendSpec wide;
  wide.kind = BackendSpec::Kind::kCpu64;
  wide.text = "cpu64";
  BackendSpec emulated;
  emulated.kind = BackendSpec::Kind::kCpuEmulated;
  emulated.format = profile.format;
  emulated.text = "cpu-emulated:" + formatName(profile.format);
  const std::vector<at::Tensor> float64 = cpuOutputs(*alone, wide);
  const std::vector<at::Tensor> rounded = cpuOutputs(*alone, emulated);
  // Measured as `stickler run` measures (outputs of kind other: figures, no verdict).
  const ModelCard measured;
  const OutputComparison rounding =
      compareOutputs(fp32, rounded, measured, profile.format, VerdictSettings{});
  const OutputComparison reference =
      compareOutputs(float64, fp32, measured, profile.format, VerdictSettings{});
  card.outputs.clear();
  for (size_t i = 0; i < fp32.size(); ++i) {
    OutputSpec output{fp32.size() == 1 ? "output" : "output." + std::to_string(i)};
    const OutputReport* format_error = i < rounding.outputs.size() ? &rounding.outputs[i] : nullptr;
    if (fp32[i].is_floating_point() && format_error && format_error->metrics &&
        i < reference.outputs.size() && reference.outputs[i].metrics) {
      output.kind = OutputKind::kActivation;
      output.relative_l2_tolerance = std::max(
          margin * format_error->metrics->relative_l2.value_or(0.0), unitRoundoff(profile.format));
      check.tolerances.push_back(output.relative_l2_tolerance);
      check.reference_relative_l2_float64.push_back(reference.outputs[i].metrics->relative_l2);
    }
    card.outputs.push_back(std::move(output));
  }
  if (check.tolerances.empty()) throw UserError("the region has no floating-point output");
  std::vector<c10::IValue> fp32_values(fp32.begin(), fp32.end());
  std::vector<c10::IValue> float64_values(float64.begin(), float64.end());
  const auto pickled = torch::jit::pickle_save(c10::ivalue::Tuple::create(
      {c10::ivalue::Tuple::create(fp32_values), c10::ivalue::Tuple::create(float64_values)}));
  return std::string(pickled.begin(), pickled.end());
}

// What `stickler run` of the archive on a profile decides: the same comparison of its outputs
// with its CPU reference (compareOutputs, the card's activations), run in this process rather
// than in a model host of its own per archive (a second each, for a run of milliseconds). Safe
// here: the model completed on the faulty device (its verdict was fail), so no fault of the
// profile aborts or hangs on these inputs, and an abort in process throws instead.
std::pair<RunVerdict, std::string> verdictOn(const LoadedModel& alone, const std::string& spec,
                                             std::vector<std::optional<double>>* errors) {
  const auto backend = makeBackend(spyreSimBackend(spec));
  const auto compiled = backend->compile(alone, Placement{});
  if (!compiled->ok()) return {RunVerdict::kBlocked, runVerdictName(RunVerdict::kBlocked)};
  RunOptions options;
  options.in_process = true;
  BackendRun run;
  try {
    run = compiled->run(alone.example_inputs, options);
  } catch (const std::exception& e) {
    return {RunVerdict::kAborted, std::string("aborted: ") + e.what()};
  }
  if (run.status != BackendRun::Status::kCompleted) {
    const RunVerdict verdict = incompleteRunVerdict(run.status);
    return {verdict, runVerdictName(verdict)};
  }
  const OutputComparison comparison =
      compareOutputs(flattenTensors(alone.example_outputs), flattenTensors(run.outputs), alone.card,
                     backend->format(), VerdictSettings{});
  const RunVerdict verdict = comparison.passed ? RunVerdict::kPass : RunVerdict::kFail;
  std::string details;
  for (const OutputReport& output : comparison.outputs) {
    if (!output.relative_l2_tolerance || !output.metrics) continue;
    if (errors) errors->push_back(output.metrics->relative_l2);
    details += (details.empty() ? "" : ", ") + output.name + " relative L2 " +
               numberText(output.metrics->relative_l2) + " (tolerance " +
               numberText(*output.relative_l2_tolerance) + ")" +
               (output.metrics->non_finite > 0
                    ? ", " + std::to_string(output.metrics->non_finite) + " non-finite"
                    : "");
  }
  return {verdict, runVerdictName(verdict) + (details.empty() ? "" : ": " + details)};
}

// A numerical candidate's checks: it must fail on the profile and, when the profile has fault
// rules, pass on the same profile without them.
bool checkNumerics(const std::string& archive, const std::string& profile_spec,
                   const DeviceProfile& profile, const std::string& directory,
                   ReproBundle& bundle) {
  NumericsReproCheck& check = *bundle.numerics;
  const auto alone = loadModel(archive);
  RunVerdict faulty = RunVerdict::kFail;
  std::tie(faulty, bundle.observed) = verdictOn(*alone, profile_spec, &check.relative_l2);
  if (profile.faults.empty()) return faulty == RunVerdict::kFail;
  check.clean_profile = (fs::path(directory) / "clean-profile.json").string();
  std::ofstream(check.clean_profile)
      << nlohmann::json{{"name", profile.name + "-without-faults"},
                        {"description", profile.name + " with no fault rules: the device as it "
                                                       "should compute (a repro's control)"},
                        {"extends", profile_spec},
                        {"faults", nlohmann::json::array()}}
             .dump(2)
      << "\n";
  check.clean_command = "stickler run " + archive + " --backend spyre-sim:" + check.clean_profile;
  RunVerdict clean = RunVerdict::kFail;
  std::tie(clean, check.clean_observed) = verdictOn(*alone, check.clean_profile, nullptr);
  check.clean_passes = clean == RunVerdict::kPass;
  return faulty == RunVerdict::kFail && *check.clean_passes;
}

void writeNumericsReadme(const ReproBundle& bundle, const ModelCard& card,
                         const std::string& module_class) {
  const NumericsReproCheck& check = *bundle.numerics;
  std::ofstream readme(fs::path(bundle.directory) / "README.md");
  readme << "# Repro: numerical failure in " << card.config.value("op", "") << "\n\n"
         << card.description << " (module class " << module_class << ").\n\n"
         << "It fails on the profile (`stickler run` exits 1):\n\n```\n"
         << bundle.command << "\n```\n\n";
  if (!check.clean_profile.empty()) {
    readme << "and passes on the same profile without its fault rules:\n\n```\n"
           << check.clean_command << "\n```\n\n";
  } else {
    readme << "The profile has no fault rules: the failure is its number format's.\n\n";
  }
  readme << "Each output is judged by its relative L2 error against the CPU fp32 reference "
            "(kind activation in the card): the tolerance is "
         << "the error of the device's format emulated on the CPU for these inputs, times the "
            "thresholds' margin, at least the format's unit roundoff. The archive holds the "
            "inputs the model fed the region (stickler/inputs.pkl) and the reference outputs in "
            "fp32 and float64 (stickler/reference_outputs.pkl, a pickled tuple of both).\n\n"
         << (bundle.reproduces ? "Checked: " : "Not reproduced by the archive alone: ")
         << "on the profile " << bundle.observed;
  if (check.clean_passes) readme << "; without its fault rules " << check.clean_observed;
  readme << ".\n";
}

// Writes one candidate bundle for `region` and checks it.
ReproBundle writeCandidate(const LoadedModel& model, const Region& region, bool keep_path,
                           const Expectation& expected, const DeviceProfile& profile,
                           const std::string& directory, double timeout_seconds) {
  const std::unordered_set<const Node*> within = nodesWithin(region);
  const std::vector<const Value*> boundary = boundaryInputs(region, within);
  const double start = phaseClock();
  BoundaryCapture capture(within, boundary);
  try {
    model.interpreter->run(model.example_inputs, &capture);
  } catch (const BoundaryCaptured&) {
    // Stopped where the region's last input was read.
  }
  notePhase("captured the inputs of the " + region.scope + " " + displayPath(region.module_path),
            phaseClock() - start);
  if (!capture.complete()) {
    throw UserError("the " + region.scope + " did not read all its inputs on the example inputs");
  }
  ReproModule repro = outlineRegion(region, boundary, capture.values(), model, keep_path);

  const std::string what = expected.numerics       ? "numerical failure"
                           : expected.rule.empty() ? expected.status
                                                   : expected.rule;
  const std::string where = displayPath(region.module_path);
  ModelCard card;
  card.name = model.card.name + "-repro";
  card.family = "repro";
  card.description =
      what + " on " + expected.op + " in " + where + " of " + model.card.name +
      (region.scope == "operator" ? ": the operator alone" : ": the module " + where) +
      ", with the inputs the model gave it";
  card.inputs = repro.inputs;
  card.config = {{"from_model", model.card.name},
                 {"from_archive", model.path},
                 {"module", where},
                 {"module_class", model.modules.classOf(region.module_path)},
                 {"op", expected.op},
                 {"scope", region.scope},
                 {"profile", profile.name}};
  if (!expected.numerics) card.config[expected.rule.empty() ? "status" : "rule"] = what;
  std::vector<c10::IValue> stored(repro.values.begin(), repro.values.end());
  const auto pickled = torch::jit::pickle_save(c10::ivalue::Tuple::create(stored));
  std::unordered_map<std::string, std::string> files = {
      {ModelCard::kArchivePath, modelCardToJson(card).dump(2)},
      {ModelCard::kCapturedInputsPath, std::string(pickled.begin(), pickled.end())}};

  ReproBundle bundle;
  bundle.directory = directory;
  bundle.archive = (fs::path(directory) / "repro.pt").string();
  bundle.scope = region.scope == "module" ? "module " + where
                 : keep_path              ? "operator, at its module path " + where
                                          : "operator";
  fs::create_directories(directory);
  repro.module.save(bundle.archive, files);
  // A shipped profile by its name, any other by its file.
  const bool shipped = fs::path(profile.path).parent_path() == fs::path(profileDirectory());
  const std::string profile_spec = shipped ? profile.name : profile.path;
  bundle.command = "stickler run " + bundle.archive + " --backend spyre-sim:" + profile_spec;
  if (expected.numerics) {
    // The card's verdict needs the region's own outputs, so the archive is written twice.
    bundle.numerics.emplace();
    card.config["expect"] = "fails on " + profile_spec + ", passes without its fault rules";
    const double judging = phaseClock();
    files[ModelCard::kReferenceOutputsPath] =
        judgeAsActivations(bundle.archive, profile, expected.margin, card, *bundle.numerics);
    notePhase("judged the reproducer's outputs", phaseClock() - judging);
    files[ModelCard::kArchivePath] = modelCardToJson(card).dump(2);
    repro.module.save(bundle.archive, files);
    bundle.reproduces = checkNumerics(bundle.archive, profile_spec, profile, directory, bundle);
    writeNumericsReadme(bundle, card, model.modules.classOf(region.module_path));
    return bundle;
  }
  std::tie(bundle.reproduces, bundle.observed) =
      check(bundle.archive, expected, profile, timeout_seconds);
  std::ofstream(fs::path(directory) / "README.md")
      << "# Repro: " << what << " on " << expected.op << "\n\n"
      << card.description << " (module class " << model.modules.classOf(region.module_path)
      << ").\n\n"
      << "```\n"
      << bundle.command << "\n```\n\n"
      << (bundle.reproduces ? "Checked: the archive alone fails the same way ("
                            : "Not reproduced by the archive alone (it shows: ")
      << bundle.observed << ").\n";
  return bundle;
}

// Whether the faults that strike `node` in the model all strike by its module path, so the
// operator taken out of its modules cannot fail the same way. A fault rule that matches every
// path, or the empty one, could still strike it alone.
bool onlyStruckAtItsPath(const Node& node, const DeviceProfile& profile) {
  const std::string op = node.kind().toQualString();
  const std::string path = modulePathOf(node);
  bool struck = false;
  for (const FaultRule& rule : profile.faults) {
    if (!faultRuleNamesOp(rule, op)) continue;
    if (faultRuleNamesPath(rule, "")) return false;
    struck = struck || faultRuleNamesPath(rule, path);
  }
  return struck;
}

// The operator alone first; then, while the candidate does not fail the same way, the same
// operator under its module path, its module, and each enclosing module up to the root: the
// smallest repro that fails as the model does. The operator alone is not tried for a fault
// that strikes by path: it cannot fail, and at 480M parameters each try costs 0.7 s.
ReproBundle writeGrownRepro(const LoadedModel& model, const Node* node, const std::string& from,
                            const Expectation& expected, const DeviceProfile& profile,
                            const std::string& directory, double timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  std::vector<std::pair<Region, bool>> candidates;
  const std::string path = node ? modulePathOf(*node) : from;
  // A blocker comes from the profile's layout rules, never its faults: its operator alone may
  // be blocked wherever it sits.
  const bool by_faults = expected.rule.empty() || expected.rule == kCompilerErrorRule;
  std::string tried;
  if (node && by_faults && onlyStruckAtItsPath(*node, profile)) {
    tried = "operator: not tried (the faults that strike it name its module path)";
  } else if (node) {
    candidates.emplace_back(operatorRegion(*node), false);
  }
  if (node && !path.empty()) candidates.emplace_back(operatorRegion(*node), true);
  for (std::string module = path;; module = module.substr(0, module.rfind('.'))) {
    if (!module.empty()) candidates.emplace_back(moduleRegion(model, module), true);
    if (module.find('.') == std::string::npos) break;
  }
  candidates.emplace_back(moduleRegion(model, ""), true);  // the whole model, as a last resort
  ReproBundle bundle;
  for (size_t i = 0; i < candidates.size(); ++i) {
    bundle = writeCandidate(model, candidates[i].first, candidates[i].second, expected, profile,
                            directory, timeout_seconds);
    bundle.grown = i;
    if (bundle.reproduces) break;
    tried += (tried.empty() ? "" : "; ") + bundle.scope + ": " + bundle.observed;
  }
  if (!bundle.reproduces) bundle.observed = tried;
  bundle.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bundle;
}

}  // namespace

ReproBundle writeBlockerRepro(const LoadedModel& model, int64_t node_index, const std::string& rule,
                              const DeviceProfile& profile, const std::string& directory) {
  int64_t index = 0;
  for (const Node* node : allNodes(*model.graph)) {
    if (!node->kind().is_aten()) continue;
    if (index++ == node_index) {
      return writeGrownRepro(model, node, "", {rule, "", node->kind().toQualString()}, profile,
                             directory, 60);
    }
  }
  throw UserError("no aten node " + std::to_string(node_index) + " in " + model.path);
}

std::optional<ReproBundle> writeRunFailureRepro(const LoadedModel& model, const std::string& module,
                                                const std::string& op, const std::string& status,
                                                const DeviceProfile& profile,
                                                const std::string& directory,
                                                double timeout_seconds) {
  for (const Node* node : allNodes(*model.graph)) {
    if (node->kind().toQualString() == op && displayPath(modulePathOf(*node)) == module) {
      return writeGrownRepro(model, node, "", {"", status, op}, profile, directory,
                             timeout_seconds);
    }
  }
  return std::nullopt;
}

ReproBundle writeNumericsRepro(const LoadedModel& model, const std::string& module,
                               std::optional<int64_t> node, const DeviceProfile& profile,
                               const std::string& directory, double margin,
                               double timeout_seconds) {
  const Node* start = nullptr;
  if (node) {
    const std::vector<const Node*> nodes = allNodes(*model.graph);
    if (*node < 0 || *node >= static_cast<int64_t>(nodes.size())) {
      throw UserError("no node " + std::to_string(*node) + " in " + model.path);
    }
    start = nodes[static_cast<size_t>(*node)];
  } else if (!module.empty() && model.modules.find(module) == nullptr) {
    throw UserError("no module " + displayPath(module) + " in " + model.path);
  }
  Expectation expected;
  expected.op = start ? start->kind().toQualString() : model.modules.classOf(module);
  expected.numerics = true;
  expected.margin = margin;
  return writeGrownRepro(model, start, module, expected, profile, directory, timeout_seconds);
}

}  // namespace stickler
