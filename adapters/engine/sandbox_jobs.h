// The sandbox worker's jobs (adapter_sandbox.h), registered by tools/framework/worker_jobs.cpp.
#pragma once

namespace stickler {

// "adapter_condition": a condition on argument lists; "adapter_trial": a draft applied to a
// model made from its recipe.
void registerSandboxJobs();

}  // namespace stickler
