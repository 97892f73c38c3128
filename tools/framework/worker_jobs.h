// Every kind of job Stickler's worker processes serve: model hosts' device runs, sandboxed adapter
// code, the review gate's checks and sweep probes. Called first thing in main() by every binary
// that starts workers (they are that binary again, in worker mode: worker_main.h).
#pragma once

namespace stickler {

void registerWorkerJobs();

}  // namespace stickler
