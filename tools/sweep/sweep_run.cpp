#include "tools/sweep/sweep_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "simulator/device/device_profile.h"
#include "simulator/support/concurrent_tasks.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/sha256.h"
#include "simulator/support/text_files.h"
#include "simulator/support/text_format.h"
#include "tools/adapters/adapter_support.h"
#include "tools/reports/report_retention.h"
#include "tools/sweep/sweep_history.h"
#include "tools/sweep/sweep_page.h"
#include "tools/sweep/sweep_summary.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Bumped when a probe would find something else for the same model, catalog and profile.
constexpr int kProbeVersion = 1;

// What a model's entry depends on besides its archive: the probe, the profile's files, the
// accepted catalog's adapters and the options that change what is found.
std::string probeKey(const DeviceProfile& profile, const std::vector<CatalogEntry>& catalog,
                     const ProbeOptions& options) {
  json keyed = {{"probe", kProbeVersion},
                {"localize", options.localize},
                {"decode_steps", options.decode_steps}};
  keyed["profile"].push_back(readTextFile(profile.path));
  for (size_t i = 1; i < profile.lineage.size(); ++i) {
    keyed["profile"].push_back(
        readTextFile(profileDirectory() + "/" + profile.lineage[i] + ".json"));
  }
  for (const CatalogEntry& entry : catalog) keyed["catalog"].push_back({entry.name, entry.text});
  return sha256Bytes(keyed.dump());
}

std::string sweepId(const std::string& seed) {
  std::string stamp = isoTimeUtcNow();  // 2026-12-01T18:04:05Z
  std::string compact;
  for (char c : stamp) {
    if (std::isdigit(static_cast<unsigned char>(c))) compact += c;
  }
  return "sweep-" + compact.substr(0, 8) + "-" + compact.substr(8, 6) + "-" +
         sha256Bytes(seed + stamp).substr(0, 6);
}

// The results a sweep directory holds, one JSON line per finished model. A line cut short by a
// kill is no result: that model runs again.
std::map<std::string, json> readResults(const fs::path& file) {
  std::map<std::string, json> results;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const json entry = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_object() && entry.contains("model") && entry.contains("category")) {
      results[entry["model"]] = entry;
    }
  }
  return results;
}

// Appends results as whole lines, each on disk before the next model's result is counted done.
class ResultLog {
 public:
  explicit ResultLog(const fs::path& file) {
    fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw UserError("cannot write " + file.string());
    // A line a kill cut short is ended, so the next result starts on a line of its own.
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      if (in.get() != '\n') writeAll("\n");
    }
    const char* kill_after = std::getenv("STICKLER_TEST_KILL_AFTER");  // the resume test's hook
    if (kill_after != nullptr) kill_after_ = std::strtoul(kill_after, nullptr, 10);
  }
  ~ResultLog() { ::close(fd_); }

  void append(const json& entry) {
    const std::lock_guard<std::mutex> lock(mutex_);
    writeAll(entry.dump() + "\n");
    ::fdatasync(fd_);
    if (kill_after_ > 0 && ++written_ >= kill_after_) ::raise(SIGKILL);
  }

 private:
  void writeAll(const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw UserError("cannot append to the sweep's results: " + std::string(strerror(errno)));
      }
      done += static_cast<size_t>(n);
    }
  }
  int fd_ = -1;
  std::mutex mutex_;
  size_t kill_after_ = 0;
  size_t written_ = 0;
};

// The sweep a directory is for; a directory of another sweep is refused, never mixed.
json openState(const fs::path& dir, const json& wanted) {
  const fs::path file = dir / "sweep-state.json";
  if (const auto text = readTextFileIfPresent(file.string())) {
    const json state = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!state.is_object()) throw UserError(file.string() + " is damaged: remove the directory");
    // Where a shard came from (a flag, Slurm) does not matter: its index and count do.
    const auto same = [&](const char* field) {
      if (std::string(field) != "shard") return state.value(field, json()) == wanted[field];
      return state.contains("shard") &&
             state["shard"].value("index", json()) == wanted["shard"]["index"] &&
             state["shard"].value("count", json()) == wanted["shard"]["count"];
    };
    for (const char* field : {"key", "profile", "models_sha256", "shard"}) {
      if (!same(field)) {
        throw UserError(dir.string() + " holds another sweep (its " + field +
                        " differs: another model list, profile, catalog or shard): choose "
                        "another --out, or remove it to start afresh");
      }
    }
    return state;
  }
  writeFileAtomically(file.string(), wanted.dump(1));
  return wanted;
}

json shardJson(const Shard& shard) {
  return {{"index", shard.index}, {"count", shard.count}, {"source", shard.source}};
}

void writeOutputs(const fs::path& dir, const json& sweep, const std::vector<SweepPoint>& points) {
  writeFileAtomically((dir / "sweep.json").string(), sweep.dump(1));
  writeFileAtomically((dir / "junit.xml").string(), renderSweepJunit(sweep));
  if (sweep["shard"]["count"].get<size_t>() == 1) {
    writeFileAtomically((dir / "report.html").string(), renderSweepHtml(sweep, points));
  }
}

// Records a whole sweep with its diff against the one before, writes its documents, applies
// the retention policy.
json finish(OperationContext& context, json sweep, const fs::path& dir,
            const RetentionPolicy& retention) {
  SweepHistory history(SweepHistory::pathFor(context.workspaceRoot()));
  history.record(sweep);
  if (const auto previous = history.previous(sweep["id"])) {
    sweep["diff"] = diffSweeps(*previous, sweep);
    history.record(sweep);
  }
  sweep["retention"] = pruneWorkspace(context.workspaceRoot(), retention);
  writeOutputs(dir, sweep, history.points(sweep["profile"]));
  return sweep;
}

}  // namespace

json runSweep(OperationContext& context, const SweepOptions& options) {
  const std::vector<std::string> all = readModelList(
      options.list, [&](const std::string& path) { return context.resolvePath(path); });
  const std::vector<std::string> models = shardModels(all, options.shard);
  const DeviceProfile profile = loadProfile(options.probe.profile);
  const std::vector<CatalogEntry> catalog = acceptedCatalog(context);
  const std::string key = probeKey(profile, catalog, options.probe);

  const fs::path dir(options.out);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw UserError("cannot create the output directory " + dir.string());
  std::string joined;
  for (const std::string& model : all) joined += model + "\n";
  json state = openState(dir, {{"id", sweepId(key + joined + options.shard.text())},
                               {"started", isoTimeUtcNow()},
                               {"key", key},
                               {"profile", profile.name},
                               {"list", options.list},
                               {"models_sha256", sha256Bytes(joined)},
                               {"shard", shardJson(options.shard)}});

  std::map<std::string, json> results = readResults(dir / "results.jsonl");
  const size_t resumed = results.size();
  ResultLog log(dir / "results.jsonl");
  std::vector<std::string> todo;
  size_t reused = 0;
  std::unique_ptr<SweepHistory> history;
  if (options.incremental)
    history = std::make_unique<SweepHistory>(SweepHistory::pathFor(context.workspaceRoot()));
  for (const std::string& model : models) {
    if (results.count(model) > 0) continue;
    if (history) {
      std::error_code missing;
      if (fs::is_regular_file(model, missing)) {
        if (auto entry = history->reusable(sha256FileRemembered(model), key)) {
          (*entry)["model"] = model;
          log.append(*entry);
          results[model] = *entry;
          ++reused;
          continue;
        }
      }
    }
    todo.push_back(model);
  }

  const TaskControl control = context.task();
  std::mutex progress;
  size_t done = models.size() - todo.size();
  std::vector<std::function<void()>> tasks;
  for (const std::string& model : todo) {
    tasks.emplace_back([&, model, limit = currentExecutionLimit()] {
      const ExecutionLimitScope scope(limit);
      json entry = probeModel(model, catalog, options.probe);
      log.append(entry);
      const std::lock_guard<std::mutex> lock(progress);
      results[model] = std::move(entry);
      control.progress(++done, models.size(), model);
    });
  }
  runConcurrently(tasks, std::max<size_t>(options.jobs, 1));

  json entries = json::array();
  for (const std::string& model : models) entries.push_back(results.at(model));
  json sweep = {{"schema", "stickler.sweep"},
                {"version", 1},
                {"id", state["id"]},
                {"started", state["started"]},
                {"finished", isoTimeUtcNow()},
                {"profile", profile.name},
                {"key", key},
                {"list", options.list},
                {"shard", shardJson(options.shard)},
                {"catalog", json::array()},
                {"options",
                 {{"localize", options.probe.localize},
                  {"decode", options.probe.decode_steps},
                  {"jobs", options.jobs},
                  {"incremental", options.incremental}}},
                {"run", {{"probed", todo.size()}, {"resumed", resumed}, {"reused", reused}}},
                {"models", entries},
                {"summary", summarizeSweep(entries)}};
  for (const CatalogEntry& entry : catalog) sweep["catalog"].push_back(entry.name);
  if (!options.shard.whole()) {
    writeOutputs(dir, sweep, {});
    return sweep;
  }
  return finish(context, std::move(sweep), dir, options.retention);
}

json mergeSweeps(OperationContext& context, const std::vector<std::string>& shard_dirs,
                 const std::string& out, const RetentionPolicy& retention) {
  if (shard_dirs.empty()) throw UserError("sweep merge needs the shards' output directories");
  std::vector<json> shards;
  std::set<size_t> indices;
  for (const std::string& dir : shard_dirs) {
    const std::string file = (fs::path(dir) / "sweep.json").string();
    const auto text = readTextFileIfPresent(file);
    if (!text) throw UserError(file + " is missing: that shard has not finished");
    json shard = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!shard.is_object() || shard.value("schema", "") != "stickler.sweep") {
      throw UserError(file + " is not a sweep document");
    }
    const json& first = shards.empty() ? shard : shards[0];
    for (const char* field : {"key", "profile", "list"}) {
      if (shard[field] != first[field]) {
        throw UserError(file + ": its " + std::string(field) +
                        " differs from the first shard's: shards of different sweeps");
      }
    }
    if (shard["shard"]["count"] != first["shard"]["count"]) {
      throw UserError(file + ": a shard of " + shard["shard"]["count"].dump() + ", not " +
                      first["shard"]["count"].dump());
    }
    if (!indices.insert(shard["shard"]["index"].get<size_t>()).second) {
      throw UserError(file + ": shard " + shard["shard"]["index"].dump() + " is given twice");
    }
    shards.push_back(std::move(shard));
  }
  const size_t count = shards[0]["shard"]["count"];
  if (indices.size() != count) {
    std::string missing;
    for (size_t i = 0; i < count; ++i) {
      if (indices.count(i) == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    }
    throw UserError("shard(s) " + missing + " of " + std::to_string(count) + " are missing");
  }
  std::map<std::string, json> by_model;
  json started = shards[0]["started"];
  json finished = shards[0]["finished"];
  json run = {{"probed", 0}, {"resumed", 0}, {"reused", 0}};
  for (const json& shard : shards) {
    for (const json& entry : shard["models"]) by_model[entry["model"]] = entry;
    started = std::min(started, shard["started"]);
    finished = std::max(finished, shard["finished"]);
    for (const char* field : {"probed", "resumed", "reused"}) {
      run[field] = run[field].get<size_t>() + shard["run"].value(field, size_t{0});
    }
  }
  json entries = json::array();
  for (auto& [model, entry] : by_model) entries.push_back(std::move(entry));
  json sweep = shards[0];
  sweep["id"] = sweepId(shards[0].value("key", "") + "merge");
  sweep["started"] = started;
  sweep["finished"] = finished;
  sweep["shard"] = shardJson({});
  sweep["merged_from"] = count;
  sweep["run"] = run;
  sweep["models"] = entries;
  sweep["summary"] = summarizeSweep(entries);
  sweep.erase("diff");
  const fs::path dir(out);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw UserError("cannot create the output directory " + dir.string());
  return finish(context, std::move(sweep), dir, retention);
}

}  // namespace stickler
