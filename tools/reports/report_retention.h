// How long a workspace keeps what diagnoses and sweeps write: saved reports
// (stickler-reports/), repro bundles (stickler-repros/) and the sweeps' history. Nightly sweeps
// apply it after each run, so that they do not fill the disk; `stickler report prune` applies
// it on demand (docs/sweeps.md, "Retention").
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

struct RetentionPolicy {
  size_t keep_sweeps = 400;  // sweeps kept in history, newest first
  int keep_days = 30;        // saved reports and repro bundles older than this are deleted
};

// Deletes what the policy does not keep (nothing when `dry_run`) and says what:
// {"sweeps": [ids], "reports": [ids], "repros": [paths], "bytes": freed}. Symbolic links are
// never followed nor deleted: they may lead out of the workspace.
nlohmann::json pruneWorkspace(const std::string& root, const RetentionPolicy& policy,
                              bool dry_run = false);

}  // namespace stickler
