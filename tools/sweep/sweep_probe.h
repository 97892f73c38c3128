// One model of a sweep, probed in a worker process of its own (a job of data: the archive's
// path, the catalog's texts, the options): the adapters that match, compile status
// without and with them, the end-to-end verdict, and the failure category (docs/sweeps.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_catalog.h"

namespace stickler {

struct ProbeOptions {
  std::string profile;         // a profile name or path, as loadProfile takes it
  double model_seconds = 600;  // the whole probe of one model, in its worker
  double run_seconds = 120;    // the device run inside it
  bool localize = false;       // name the module of a divergence (about log2(M) more runs)
  // A decoder whose forward passes is judged by this many greedy decode steps (0: not).
  int64_t decode_steps = 4;
};

// Probes `model` in a worker process: a crash, a hang or an exception in it becomes the
// model's category (crash, timeout, bad archive, error), never the caller's. Throws Cancelled
// when the caller's execution limit is cancelled. Schema: a model entry of stickler.sweep.
nlohmann::json probeModel(const std::string& model, const std::vector<CatalogEntry>& catalog,
                          const ProbeOptions& options);

// The worker's side: the "sweep_probe" job.
void registerProbeJob();

}  // namespace stickler
