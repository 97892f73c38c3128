#include "tools/review/review_gate.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>

#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_stack.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_cache.h"
#include "simulator/graph/model_facts.h"
#include "simulator/run/run_model.h"
#include "simulator/support/concurrent_tasks.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/sha256.h"
#include "simulator/support/task_control.h"
#include "simulator/support/text_format.h"
#include "simulator/workers/job_registry.h"
#include "simulator/workers/worker_pool.h"
#include "simulator/workers/worker_process.h"
#include "tools/adapters/adapter_support.h"
#include "tools/adapters/bring_up.h"
#include "tools/adapters/decode_summary.h"

namespace stickler {
namespace {

using nlohmann::json;

constexpr int kGateVersion = 1;

struct GateModel {
  std::string model;
  std::string profile;
  std::string role;    // "claimed" or "regression"
  std::string sha256;  // "" when the archive is gone
  const KnownModel* known = nullptr;
};

// Why a run's verdict is not a pass, in a line.
std::string verdictReason(const RunResult& run) {
  const std::string verdict = runVerdictName(run.verdict);
  if (run.compile && !run.compile->blockers.empty()) {
    const BlockerReport& first = run.compile->blockers.front();
    return verdict + ": " + std::to_string(run.compile->blockers.size()) +
           " compile blocker(s), first " + first.rule + " " + first.op + " in " + first.module;
  }
  if (run.run && run.run->status != "completed") {
    return verdict + ": the device run " + run.run->status + ": " + run.run->message;
  }
  if (run.comparison) {
    for (const OutputReport& output : run.comparison->outputs.outputs) {
      if (output.verdict && *output.verdict == OutputVerdict::kFail) {
        return verdict + ": output " + output.name + " " +
               (output.reason.empty() ? "differs from the CPU reference" : output.reason);
      }
    }
  }
  return verdict;
}

// In the check's worker: the model loaded with the gate's seed, every adapter meant for it and
// the profile applied (each checked for equivalence on the fresh draws), then run end to end;
// a decoder whose forward passes is then decoded `decode_steps` steps, and the decode's is the
// verdict.
json gateOneModel(const std::string& model, const std::string& profile_name,
                  const std::vector<CatalogEntry>& catalog, uint64_t seed, double seconds,
                  int64_t decode_steps) {
  BringUpRequest request;
  request.model = model;
  request.seed = seed;
  request.original = loadModelSeeded(model, seed);
  request.catalog = &catalog;
  request.profile = profile_name;
  request.run_seconds = seconds;
  // The run waits on a model host while the whole stack's check computes here.
  request.run_beside_check = true;
  if (cardOf(*request.original).decode) request.decode_steps = decode_steps;
  request.decode_if = forwardPassed;
  const BringUpResult brought = bringUp(request);
  const json stacking = stackingToJson(brought.stacking, *brought.stack, 10);
  const RunResult& verdict_run = brought.decode ? *brought.decode : *brought.run;
  json result = {{"name", cardOf(*brought.original).name},
                 {"verdict", runVerdictName(verdict_run.verdict)},
                 {"applied", stacking["applied"]},
                 {"refused", stacking["refused"]}};
  if (stacking.contains("whole_model")) result["whole_model"] = stacking["whole_model"];
  if (brought.decode) {
    result["forward_verdict"] = runVerdictName(brought.run->verdict);
    result["decode"] = decodeSummaryToJson(*brought.decode, *brought.decode_adaptation);
  }
  if (brought.run->verdict != RunVerdict::kPass) {
    result["reason"] = verdictReason(*brought.run);
  } else if (brought.decode && brought.decode->verdict != RunVerdict::kPass) {
    result["reason"] = decodeFailureReason(*brought.decode);
  }
  return result;
}

json runInGateWorker(const GateModel& target, const std::vector<CatalogEntry>& catalog,
                     uint64_t seed, const GateOptions& options) {
  const double seconds = options.model_seconds;
  json entry = {{"model", target.model},
                {"profile", target.profile},
                {"role", target.role},
                {"sha256", target.sha256}};
  if (target.known != nullptr) {
    entry["passed_with"] = target.known->catalog_commit;
    if (!target.sha256.empty() && target.sha256 != target.known->sha256) {
      entry["note"] = "the archive changed since it passed";
    }
  }
  if (target.sha256.empty()) {
    entry["status"] = "skipped";
    entry["reason"] = "the archive is gone";
    return entry;
  }
  const WireMessage job{{{"kind", "gate_check"},
                         {"model", target.model},
                         {"profile", target.profile},
                         {"catalog", catalogToJson(catalog)},
                         {"seed", seed},
                         {"seconds", seconds},
                         {"decode_steps", options.decode_steps}},
                        {}};
  const std::atomic<bool>* cancelled = currentExecutionLimit().cancelled;
  WorkerPool::Lease lease = WorkerPool::jobWorkers().acquire("gate", 0, "gate", cancelled);
  const JobOutcome outcome = lease.worker().run(job, seconds, cancelled);
  entry["seconds"] = outcome.seconds;
  switch (outcome.kind) {
    case JobOutcome::Kind::kCompleted:
      entry["status"] = "completed";
      entry.update(outcome.result.header.at("result"));
      break;
    case JobOutcome::Kind::kFailed:
      entry["status"] = "failed";
      entry["reason"] = firstLine(outcome.message);
      break;
    case JobOutcome::Kind::kTimedOut:
      entry["status"] = "timed_out";
      entry["reason"] = "the gate's worker ran out of its " + std::to_string(int(seconds)) + " s";
      break;
    case JobOutcome::Kind::kCrashed:
      entry["status"] = "aborted";
      entry["reason"] = "the gate's worker died of signal " + std::to_string(outcome.signal) +
                        (outcome.stderr_tail.empty() ? "" : ": " + firstLine(outcome.stderr_tail));
      break;
    case JobOutcome::Kind::kCancelled:
      throw Cancelled();
  }
  return entry;
}

// What is wrong with one model's result, as lines a reviewer reads.
std::vector<std::string> problemsOf(const json& entry, const std::set<std::string>& proposed) {
  std::vector<std::string> problems;
  const std::string where =
      entry["model"].get<std::string>() + " on " + entry["profile"].get<std::string>();
  const bool regression = entry["role"] == "regression";
  if (entry["status"] == "skipped") {
    // A known model whose archive is gone is no regression; a claim without its model fails.
    if (!regression) problems.push_back(where + ": " + entry.value("reason", "skipped"));
    return problems;
  }
  if (entry["status"] != "completed") {
    problems.push_back(where + ": " + entry["status"].get<std::string>() + ": " +
                       entry.value("reason", ""));
    return problems;
  }
  for (const json& refused : entry["refused"]) {
    const std::string adapter = refused.value("adapter", "");
    if (proposed.count(adapter) > 0) {
      problems.push_back("adapter " + adapter + " was refused on " + where +
                         " with the gate's fresh input draws: " + refused.value("reason", ""));
    }
  }
  if (entry["verdict"] != "pass") {
    problems.push_back((regression ? "regression: " + where + " passed with main " +
                                         entry.value("passed_with", "").substr(0, 12) + " and is "
                                   : where + ": ") +
                       entry.value("reason", entry["verdict"].get<std::string>()));
  }
  return problems;
}

std::vector<GateModel> modelsToGate(OperationContext& context, const Proposal& proposal,
                                    const std::vector<KnownModel>& known, uint64_t seed,
                                    const GateOptions& options, json* regression) {
  std::vector<GateModel> models;
  std::set<std::pair<std::string, std::string>> claimed;
  const auto sha = [](const std::string& path) {
    std::error_code error;
    return std::filesystem::is_regular_file(path, error) ? sha256FileRemembered(path)
                                                         : std::string();
  };
  for (const ModelClaim& claim : proposal.claims) {
    const std::string path = context.resolvePath(claim.model);
    claimed.insert({path, claim.profile});
    models.push_back({path, claim.profile, "claimed", sha(path)});
  }
  std::vector<const KnownModel*> others;
  for (const KnownModel& model : known) {
    if (claimed.count({model.model, model.profile}) == 0) others.push_back(&model);
  }
  const size_t total = others.size();
  if (others.size() > options.regression_sample) {
    // A seeded sample: ordered by a hash of the seed and the path, the first ones taken.
    std::vector<std::pair<std::string, const KnownModel*>> ranked;
    for (const KnownModel* model : others) {
      ranked.emplace_back(
          sha256Bytes(std::to_string(seed) + "\n" + model->model + "\n" + model->profile), model);
    }
    std::sort(ranked.begin(), ranked.end());
    others.clear();
    for (size_t i = 0; i < options.regression_sample; ++i) others.push_back(ranked[i].second);
  }
  for (const KnownModel* model : others) {
    models.push_back({model->model, model->profile, "regression", sha(model->model), model});
  }
  *regression = {{"known", total},
                 {"checked", others.size()},
                 {"sampled", total > others.size()},
                 {"sample_size", options.regression_sample}};
  return models;
}

}  // namespace

std::string gateVerdictText(const json& entry) {
  std::string text = entry.value("verdict", entry.value("status", ""));
  if (!entry.contains("decode")) return text;
  const json& decode = entry["decode"];
  const std::string steps = std::to_string(decode.value("steps", 0));
  if (decode.value("first_failing_step", json()).is_number()) {
    return text + " at decode step " + decode["first_failing_step"].dump() + " of " + steps +
           " (the forward passes)";
  }
  return text + " through " + steps + " decode steps";
}

void registerGateJob() {
  registerJob("gate_check", [](const WireMessage& job, JobContext&) -> WireMessage {
    const json& header = job.header;
    // The next check is of another model: its host takes over this one's, not a new process.
    WorkerPool::modelHosts().repurposeIdle(true);
    return {{{"result",
              gateOneModel(header.at("model"), header.at("profile"),
                           catalogFromJson(header.at("catalog")), header.at("seed").get<uint64_t>(),
                           header.at("seconds").get<double>(),
                           header.at("decode_steps").get<int64_t>())}},
            {}};
  });
}

uint64_t gateSeed(const std::string& proposal_commit, const std::string& main_commit) {
  const std::string digest = sha256Bytes(proposal_commit + "\n" + main_commit);
  return 1000 + std::stoull(digest.substr(0, 7), nullptr, 16);
}

GateRun runGate(OperationContext& context, ProposalStore& store, const Proposal& proposal,
                const WorkspaceCatalog& catalog, const WorkspaceCatalog::ApprovalPlan& plan,
                const GateOptions& options) {
  const uint64_t seed = gateSeed(proposal.commit, plan.main);
  json regression;
  const std::vector<KnownModel> known = store.knownModels();  // GateModel points into it
  const std::vector<GateModel> models =
      modelsToGate(context, proposal, known, seed, options, &regression);
  // The key: everything the result depends on that can change without the proposal changing.
  json keyed = {{"gate", kGateVersion},
                {"proposal", proposal.commit},
                {"main", plan.main},
                {"tree", plan.tree},
                {"seed", seed},
                {"sample", options.regression_sample},
                {"decode_steps", options.decode_steps}};
  for (const GateModel& model : models) {
    keyed["models"].push_back({model.model, model.profile, model.role, model.sha256});
  }
  std::string shipped;
  for (const CatalogEntry& entry : readCatalogDir(shippedCatalogDir(), "shipped")) {
    shipped += entry.name + "\n" + entry.text + "\n";
  }
  keyed["shipped"] = sha256Bytes(shipped);
  GateRun gate;
  gate.key = sha256Bytes(keyed.dump());
  if (const auto stored = store.findGate(proposal.id, gate.key)) {
    const json report = json::parse(stored->result, nullptr, /*allow_exceptions=*/false);
    // A model that ran out of time may have met a busy machine: that result is not reused.
    bool timed_out = !report.is_object();
    for (const json& entry : report.is_object() ? report.value("models", json::array()) : json())
      timed_out = timed_out || entry.value("status", "") == "timed_out";
    if (!timed_out) {
      gate.passed = stored->passed;
      gate.reused = true;
      gate.report = report;
      return gate;
    }
  }

  const std::vector<CatalogEntry> entries = catalogAtTree(catalog, plan.tree, plan.adapters);
  const std::set<std::string> proposed(plan.adapters.begin(), plan.adapters.end());
  std::vector<json> results(models.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < models.size(); ++i) {
    tasks.emplace_back([&, i, limit = currentExecutionLimit()] {
      const ExecutionLimitScope scope(limit);
      results[i] = runInGateWorker(models[i], entries, seed, options);
    });
  }
  runConcurrently(tasks);

  json problems = json::array();
  for (const CatalogEntry& entry : entries) {
    if (proposed.count(entry.name) > 0 && !entry.file) {
      problems.push_back("adapter " + entry.name + " does not load: " + entry.error);
    }
  }
  std::set<std::string> applied_to_claimed;
  for (const json& entry : results) {
    for (const std::string& problem : problemsOf(entry, proposed)) problems.push_back(problem);
    if (entry["role"] != "claimed" || !entry.contains("applied")) continue;
    for (const json& applied : entry["applied"]) {
      applied_to_claimed.insert(applied.value("adapter", ""));
    }
  }
  for (const std::string& adapter : plan.adapters) {
    if (applied_to_claimed.count(adapter) == 0) {
      problems.push_back("adapter " + adapter +
                         " changed none of the claimed models (it matched nothing, or was "
                         "refused): the claims do not show it working");
    }
  }
  gate.passed = problems.empty();
  gate.report = {{"schema", "stickler.gate"},
                 {"version", kGateVersion},
                 {"passed", gate.passed},
                 {"time", isoTimeUtcNow()},
                 {"proposal_commit", proposal.commit},
                 {"main", plan.main},
                 {"tree", plan.tree},
                 {"seed", seed},
                 {"adapters", plan.adapters},
                 {"changed_on_main", plan.changed_on_main},
                 {"regression", regression},
                 {"models", results},
                 {"problems", problems}};
  store.storeGate(proposal.id, {gate.key, gate.passed, gate.report.dump(), isoTimeUtcNow()});
  return gate;
}

json baselineModels(OperationContext& context, ProposalStore& store,
                    const WorkspaceCatalog& catalog, const std::vector<std::string>& models,
                    const std::string& profile, const GateOptions& options) {
  const std::string main = catalog.mainCommit();
  const std::vector<CatalogEntry> entries = catalogAtTree(catalog, main, {});
  std::vector<GateModel> targets;
  for (const std::string& model : models) {
    const std::string path = context.resolvePath(model);
    std::error_code error;
    targets.push_back(
        {path, profile, "baseline",
         std::filesystem::is_regular_file(path, error) ? sha256FileRemembered(path) : ""});
  }
  std::vector<json> results(targets.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < targets.size(); ++i) {
    tasks.emplace_back([&, i, limit = currentExecutionLimit()] {
      const ExecutionLimitScope scope(limit);
      // The example inputs every tool uses: the baseline is what main does for anyone.
      results[i] = runInGateWorker(targets[i], entries, 0, options);
    });
  }
  runConcurrently(tasks);
  std::vector<KnownModel> passed;
  const std::string now = isoTimeUtcNow();
  for (json& entry : results) {
    entry["known"] =
        entry.value("status", "") == "completed" && entry.value("verdict", "") == "pass";
    if (entry["known"].get<bool>()) {
      passed.push_back({entry["model"], profile, entry.value("sha256", ""), main, now, "baseline"});
    }
  }
  store.recordKnownModels(passed);
  return {{"schema", "stickler.baseline"},
          {"version", 1},
          {"main", main},
          {"profile", profile},
          {"models", results},
          {"known_models", store.knownModels().size()}};
}

std::string gateSummary(const json& report) {
  size_t claimed = 0;
  size_t regression = 0;
  size_t skipped = 0;
  for (const json& entry : report["models"]) {
    if (entry.value("status", "") == "skipped") {
      ++skipped;
    } else if (entry["role"] == "claimed") {
      ++claimed;
    } else {
      ++regression;
    }
  }
  std::string summary =
      std::string(report.value("passed", false) ? "passed" : "failed") + ": " +
      std::to_string(claimed) + " claimed model(s) end to end, the proposal's adapters checked " +
      "on fresh input draws (seed " + std::to_string(report.value("seed", uint64_t{0})) + "), " +
      std::to_string(regression) + " regression model(s) of " +
      std::to_string(report["regression"].value("known", 0)) + " the catalog passed";
  if (report["regression"].value("sampled", false)) summary += " (a seeded sample)";
  if (skipped > 0) summary += ", " + std::to_string(skipped) + " skipped (archive gone)";
  for (const json& problem : report["problems"]) summary += "\n- " + problem.get<std::string>();
  return summary;
}

}  // namespace stickler
