#include "tools/framework/worker_jobs.h"

#include "adapters/engine/recipe_replay.h"
#include "adapters/engine/sandbox_jobs.h"
#include "simulator/backends/device_run_job.h"
#include "tools/review/review_gate.h"
#include "tools/sweep/sweep_probe.h"

namespace stickler {

void registerWorkerJobs() {
  registerDeviceRunJobs(modelFromRecipe);
  registerSandboxJobs();
  registerProbeJob();
  registerGateJob();
}

}  // namespace stickler
