#include "tools/sweep/sweep_probe.h"

#include <filesystem>
#include <set>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_stack.h"
#include "simulator/device/device_profile.h"
#include "simulator/diagnose/causal_localization.h"
#include "simulator/graph/model_cache.h"
#include "simulator/graph/model_facts.h"
#include "simulator/lowering/check_support.h"
#include "simulator/run/run_model.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
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

// What blocks a model, as the blocker ranking counts it: an operator the device lacks, or a
// layout or capacity rule.
std::string blockerKey(const BlockerReport& blocker) {
  return blocker.rule == "unsupported-op" ? "unsupported op " + blocker.op
                                          : "layout rule " + blocker.rule;
}

// Lowering's outcome for the sweep: its status, the blockers counted and keyed (all of them),
// and the first few with their modules (a model may have hundreds).
json compileSummary(const CompileReport& report) {
  constexpr size_t kListed = 10;
  json listed = json::array();
  std::set<std::string> keys;
  for (const BlockerReport& blocker : report.blockers) {
    keys.insert(blockerKey(blocker));
    if (listed.size() < kListed) {
      listed.push_back({{"rule", blocker.rule},
                        {"op", blocker.op},
                        {"module", blocker.module},
                        {"key", blockerKey(blocker)}});
    }
  }
  return {{"status", compileStatusName(report.status)},
          {"blockers", report.blockers.size()},
          {"by_rule", report.blockers_by_rule},
          {"keys", std::vector<std::string>(keys.begin(), keys.end())},
          {"first", listed.empty() ? json() : listed[0]},
          {"list", listed}};
}

// The weights' bytes on the card: the real model's when the archive stands in for it with
// fewer layers (the card's config.parameters_full), in the device's 16-bit format.
int64_t weightBytes(const LoadedModel& model) {
  const json& config = cardOf(model).config;
  const int64_t parameters = config.is_object() && config.contains("parameters_full") &&
                                     config["parameters_full"].is_number_integer()
                                 ? config["parameters_full"].get<int64_t>()
                                 : uniqueParametersOf(model);
  return parameters * DeviceProfile::kBytesPerValue;
}

void setCategory(json& result, const std::string& category, const std::string& detail) {
  result["category"] = category;
  result["detail"] = detail;
}

json optionsToJson(const ProbeOptions& options) {
  return {{"profile", options.profile},
          {"model_seconds", options.model_seconds},
          {"run_seconds", options.run_seconds},
          {"localize", options.localize},
          {"decode_steps", options.decode_steps}};
}

ProbeOptions optionsFromJson(const json& doc) {
  ProbeOptions options;
  options.profile = doc.at("profile").get<std::string>();
  options.model_seconds = doc.at("model_seconds").get<double>();
  options.run_seconds = doc.at("run_seconds").get<double>();
  options.localize = doc.at("localize").get<bool>();
  options.decode_steps = doc.at("decode_steps").get<int64_t>();
  return options;
}

// In the probe's worker: everything the model's entry says.
json probeHere(const std::string& path, const std::vector<CatalogEntry>& catalog,
               const ProbeOptions& options) {
  json result = json::object();
  BringUpRequest request;
  try {
    request.original = obtainModel(path, {}, nullptr);
  } catch (const UserError& error) {
    result["verdict"] = "not_run";
    setCategory(result, "bad archive", firstLine(error.what()));
    return result;
  }
  request.model = path;
  request.catalog = &catalog;
  request.profile = options.profile;
  request.compile_reports = true;
  request.run_seconds = options.run_seconds;
  request.localize = options.localize;
  // The run waits on a model host while the whole stack's check computes here.
  request.run_beside_check = true;
  // A model runs when it compiles, fits the card, and has weights.
  request.run_if = [](const BringUpResult& so_far) {
    return so_far.with->status == CompileStatus::kOk && !so_far.weightless &&
           weightBytes(*so_far.original) <= so_far.profile.device.card_memory_bytes;
  };
  if (cardOf(*request.original).decode) request.decode_steps = options.decode_steps;
  request.decode_if = forwardPassed;
  const BringUpResult brought = bringUp(request);
  const DeviceProfile& profile = brought.profile;
  const ModelCard& card = cardOf(*brought.original);
  result["name"] = card.name;
  result["family"] = card.family.empty() ? "unknown" : card.family;
  result["sha256"] = identityOf(*brought.original).sha256;
  result["weight_bytes"] = weightBytes(*brought.original);
  result["lowered_only"] = brought.weightless;
  result["compile_without"] = compileSummary(*brought.without);

  const json applied = brought.stacking.pushedNames(*brought.stack);
  json refused = json::array();
  for (const StackingRefusal& refusal : brought.stacking.refused) {
    refused.push_back({{"adapter", refusal.adapter}, {"reason", firstLine(refusal.reason)}});
  }
  result["adapters"] = {{"applied", applied}, {"refused", refused}};
  const json with = compileSummary(*brought.with);
  result["compile_with"] = with;
  result["blockers"] = with["keys"];
  result["covered"] = with["status"] == "ok";

  if (with["status"] == "blocked") {
    result["verdict"] = "blocked";
    const json& first = with["first"];
    if (applied.empty() && refused.empty()) {
      setCategory(result, "no adapter",
                  "no adapter in the catalog matches; first blocker " +
                      first["key"].get<std::string>() + " in " +
                      first["module"].get<std::string>());
    } else {
      setCategory(result, first["key"].get<std::string>(),
                  std::to_string(with["blockers"].get<int>()) + " blocker(s) left after " +
                      std::to_string(applied.size()) + " adapter(s); first in " +
                      first["module"].get<std::string>());
    }
    return result;
  }
  if (with["status"] == "compiler_error") {
    result["verdict"] = "blocked";
    setCategory(result, "compiler error", "the device compiler failed");
    return result;
  }
  if (result["weight_bytes"].get<int64_t>() > profile.device.card_memory_bytes) {
    result["verdict"] = "not_run";
    setCategory(result, "too large",
                std::to_string(result["weight_bytes"].get<int64_t>() >> 30) +
                    " GiB of weights, more than the card's " +
                    std::to_string(profile.device.card_memory_bytes >> 30) + " GiB");
    return result;
  }
  if (brought.weightless) {
    result["verdict"] = "not_run";
    setCategory(result, "lowered only", "compiles; a geometry without weights is not run");
    return result;
  }

  const RunResult& run = *brought.run;
  result["verdict"] = runVerdictName(run.verdict);
  if (brought.decode) {
    result["forward_verdict"] = result["verdict"];
    result["decode"] = decodeSummaryToJson(*brought.decode, *brought.decode_adaptation);
    result["verdict"] = runVerdictName(brought.decode->verdict);
    if (brought.decode->verdict != RunVerdict::kPass) {
      // The forward passed: what fails is the decode, a category of its own.
      const DecodeReport& decode = *brought.decode->decode;
      setCategory(result,
                  !decode.blocked_graph.empty() ? "decode blocked"
                  : decode.first_failing_step   ? "decode divergence"
                                                : "decode error",
                  decodeFailureReason(*brought.decode));
      return result;
    }
  }
  switch (run.verdict) {
    case RunVerdict::kPass:
      setCategory(result, "pass", "");
      break;
    case RunVerdict::kAborted: {
      const std::string module = run.run && run.run->module ? *run.run->module : "<root>";
      setCategory(result, "runtime abort in " + module,
                  run.run ? firstLine(run.run->message) : "the device run aborted");
      break;
    }
    case RunVerdict::kTimedOut:
      setCategory(
          result, "timeout",
          "the device run did not finish in " + std::to_string(int(options.run_seconds)) + " s");
      break;
    case RunVerdict::kFail: {
      const std::string module = brought.localization && brought.localization->culprit
                                     ? brought.localization->culprit->module
                                     : "";
      setCategory(result, module.empty() ? "divergence" : "divergence in " + module,
                  "the outputs differ from the CPU reference beyond the verdict's tolerance");
      break;
    }
    default:
      setCategory(result, "error",
                  run.run ? firstLine(run.run->message) : "the device run could not be made");
  }
  return result;
}

}  // namespace

json probeModel(const std::string& model, const std::vector<CatalogEntry>& catalog,
                const ProbeOptions& options) {
  json entry = {{"model", model}};
  std::error_code error;
  if (!std::filesystem::is_regular_file(model, error)) {
    entry["verdict"] = "not_run";
    setCategory(entry, "bad archive", "no such file");
    return entry;
  }
  const WireMessage job{{{"kind", "sweep_probe"},
                         {"model", model},
                         {"catalog", catalogToJson(catalog)},
                         {"options", optionsToJson(options)}},
                        {}};
  const std::atomic<bool>* cancelled = currentExecutionLimit().cancelled;
  WorkerPool::Lease lease = WorkerPool::jobWorkers().acquire("probe", 0, "probe", cancelled);
  const JobOutcome outcome = lease.worker().run(job, options.model_seconds, cancelled);
  entry["seconds"] = outcome.seconds;
  switch (outcome.kind) {
    case JobOutcome::Kind::kCompleted:
      entry.update(outcome.result.header.at("entry"));
      break;
    case JobOutcome::Kind::kFailed:
      entry["verdict"] = "failed";
      setCategory(entry, "error", firstLine(outcome.message));
      break;
    case JobOutcome::Kind::kTimedOut:
      entry["verdict"] = "timed_out";
      setCategory(
          entry, "timeout",
          "the model's worker ran out of its " + std::to_string(int(options.model_seconds)) + " s");
      break;
    case JobOutcome::Kind::kCrashed:
      entry["verdict"] = "failed";
      setCategory(entry, "crash",
                  "the model's worker died of signal " + std::to_string(outcome.signal) +
                      (outcome.stderr_tail.empty() ? "" : ": " + firstLine(outcome.stderr_tail)));
      break;
    case JobOutcome::Kind::kCancelled:
      throw Cancelled();
  }
  return entry;
}

void registerProbeJob() {
  registerJob("sweep_probe", [](const WireMessage& job, JobContext&) -> WireMessage {
    // The next probe is of another model: its host takes over this one's, not a new process.
    WorkerPool::modelHosts().repurposeIdle(true);
    return {{{"entry", probeHere(job.header.at("model").get<std::string>(),
                                 catalogFromJson(job.header.at("catalog")),
                                 optionsFromJson(job.header.at("options")))}},
            {}};
  });
}

}  // namespace stickler
