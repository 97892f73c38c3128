// `stickler sweep`: every model of a list probed on a profile, each in a worker with a timeout,
// its result appended to the output directory as it finishes so that a killed sweep resumes
// where it stopped; then the sweep's documents and, for a whole sweep, its record in history.
// `stickler sweep merge` makes one sweep of shards. docs/sweeps.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/framework/operation.h"
#include "tools/reports/report_retention.h"
#include "tools/sweep/sweep_models.h"
#include "tools/sweep/sweep_probe.h"

namespace stickler {

struct SweepOptions {
  std::string list;  // resolved path of the model list
  std::string out;   // resolved output directory
  size_t jobs = 2;
  Shard shard;
  bool incremental = false;
  ProbeOptions probe;
  RetentionPolicy retention;
};

// Returns the sweep's document (schema stickler.sweep), also written to out/sweep.json.
nlohmann::json runSweep(OperationContext& context, const SweepOptions& options);

// One sweep of the shards' outputs (each a `sweep --shard K/N` directory of the same list,
// profile and catalog, every shard present once), written to `out` and recorded in history.
nlohmann::json mergeSweeps(OperationContext& context, const std::vector<std::string>& shard_dirs,
                           const std::string& out, const RetentionPolicy& retention);

}  // namespace stickler
