#include "tools/reports/report_retention.h"

#include <chrono>
#include <filesystem>

#include "tools/sweep/sweep_history.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool olderThan(const fs::path& path, fs::file_time_type cutoff) {
  std::error_code error;
  const fs::file_time_type written = fs::last_write_time(path, error);
  return !error && written < cutoff;
}

uintmax_t sizeOf(const fs::path& path) {
  std::error_code error;
  if (fs::is_regular_file(fs::symlink_status(path, error))) return fs::file_size(path, error);
  uintmax_t total = 0;
  for (auto it = fs::recursive_directory_iterator(path, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file(error) && !it->is_symlink(error)) total += it->file_size(error);
  }
  return total;
}

}  // namespace

json pruneWorkspace(const std::string& root, const RetentionPolicy& policy, bool dry_run) {
  json pruned = {{"sweeps", json::array()},
                 {"reports", json::array()},
                 {"repros", json::array()},
                 {"bytes", 0},
                 {"dry_run", dry_run},
                 {"keep_days", policy.keep_days},
                 {"keep_sweeps", policy.keep_sweeps}};
  const fs::file_time_type cutoff =
      fs::file_time_type::clock::now() - std::chrono::hours(24) * policy.keep_days;
  uintmax_t bytes = 0;
  std::error_code error;
  const fs::path reports = fs::path(root) / "stickler-reports";
  if (fs::is_directory(fs::symlink_status(reports, error))) {
    for (const fs::directory_entry& entry : fs::directory_iterator(reports, error)) {
      const fs::path& path = entry.path();
      if (entry.is_symlink(error) || !entry.is_regular_file(error) || path.extension() != ".json" ||
          !olderThan(path, cutoff)) {
        continue;
      }
      bytes += sizeOf(path);
      pruned["reports"].push_back(path.stem().string());
      if (!dry_run) fs::remove(path, error);
    }
  }
  // A repro bundle is a directory under stickler-repros/<model>/.
  const fs::path repros = fs::path(root) / "stickler-repros";
  if (fs::is_directory(fs::symlink_status(repros, error))) {
    for (const fs::directory_entry& model : fs::directory_iterator(repros, error)) {
      if (model.is_symlink(error) || !model.is_directory(error)) continue;
      for (const fs::directory_entry& bundle : fs::directory_iterator(model.path(), error)) {
        if (bundle.is_symlink(error) || !olderThan(bundle.path(), cutoff)) continue;
        bytes += sizeOf(bundle.path());
        pruned["repros"].push_back(fs::relative(bundle.path(), root, error).string());
        if (!dry_run) fs::remove_all(bundle.path(), error);
      }
      if (!dry_run && fs::is_empty(model.path(), error)) fs::remove(model.path(), error);
    }
  }
  const std::string history = SweepHistory::pathFor(root);
  if (fs::exists(history, error)) {
    SweepHistory store(history);
    if (dry_run) {
      const auto points = store.points();
      for (size_t i = 0; i + policy.keep_sweeps < points.size(); ++i) {
        pruned["sweeps"].push_back(points[i].id);
      }
    } else {
      pruned["sweeps"] = store.prune(policy.keep_sweeps);
    }
  }
  pruned["bytes"] = bytes;
  return pruned;
}

}  // namespace stickler
