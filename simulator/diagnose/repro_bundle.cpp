#include "simulator/diagnose/repro_bundle.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include "simulator/backends/backend.h"
#include "simulator/device/device_profile.h"
#include "simulator/diagnose/repro_region.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"
#include "simulator/graph/node_info.h"
#include "simulator/lowering/lowering.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

// What the region read from outside on the model's example inputs (their first execution).
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
    }
  }
  bool complete() const {
    return std::all_of(captured_.begin(), captured_.end(), [](bool c) { return c; });
  }
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
};

// What a repro must show to count: the same blocker, or the same run-time failure in the same
// operator.
struct Expectation {
  std::string rule;    // a blocker's rule; "" for a run-time failure
  std::string status;  // a run-time failure: aborted, timed_out, failed
  std::string op;
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

// Writes one candidate bundle for `region` and checks it.
ReproBundle writeCandidate(const LoadedModel& model, const Region& region, bool keep_path,
                           const Expectation& expected, const DeviceProfile& profile,
                           const std::string& directory, double timeout_seconds) {
  const std::unordered_set<const Node*> within = nodesWithin(region);
  const std::vector<const Value*> boundary = boundaryInputs(region, within);
  BoundaryCapture capture(within, boundary);
  model.interpreter->run(model.example_inputs, &capture);
  if (!capture.complete()) {
    throw UserError("the " + region.scope + " did not read all its inputs on the example inputs");
  }
  ReproModule repro = outlineRegion(region, boundary, capture.values(), model, keep_path);

  const std::string what = expected.rule.empty() ? expected.status : expected.rule;
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
  card.config[expected.rule.empty() ? "status" : "rule"] = what;
  std::vector<c10::IValue> stored(repro.values.begin(), repro.values.end());
  const auto pickled = torch::jit::pickle_save(c10::ivalue::Tuple::create(stored));

  ReproBundle bundle;
  bundle.directory = directory;
  bundle.archive = (fs::path(directory) / "repro.pt").string();
  bundle.scope = region.scope == "module" ? "module " + where
                 : keep_path              ? "operator, at its module path " + where
                                          : "operator";
  fs::create_directories(directory);
  repro.module.save(bundle.archive, {{ModelCard::kArchivePath, modelCardToJson(card).dump(2)},
                                     {ModelCard::kCapturedInputsPath,
                                      std::string(pickled.begin(), pickled.end())}});
  // A shipped profile by its name, any other by its file.
  const bool shipped = fs::path(profile.path).parent_path() == fs::path(profileDirectory());
  bundle.command = "stickler run " + bundle.archive +
                   " --backend spyre-sim:" + (shipped ? profile.name : profile.path);
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

// The operator alone first; then, while the candidate does not fail the same way, the same
// operator under its module path, its module, and each enclosing module up to the root: the
// smallest repro that fails as the model does.
ReproBundle writeGrownRepro(const LoadedModel& model, const Node& node, const Expectation& expected,
                            const DeviceProfile& profile, const std::string& directory,
                            double timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  std::vector<std::pair<Region, bool>> candidates = {{operatorRegion(node), false}};
  const std::string path = modulePathOf(node);
  if (!path.empty()) candidates.emplace_back(operatorRegion(node), true);
  for (std::string module = path;; module = module.substr(0, module.rfind('.'))) {
    if (!module.empty()) candidates.emplace_back(moduleRegion(model, module), true);
    if (module.find('.') == std::string::npos) break;
  }
  candidates.emplace_back(moduleRegion(model, ""), true);  // the whole model, as a last resort
  ReproBundle bundle;
  std::string tried;
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
      return writeGrownRepro(model, *node, {rule, "", node->kind().toQualString()}, profile,
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
      return writeGrownRepro(model, *node, {"", status, op}, profile, directory, timeout_seconds);
    }
  }
  return std::nullopt;
}

}  // namespace stickler
