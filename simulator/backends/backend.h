#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/script.h>

#include "simulator/backends/backend_spec.h"
#include "simulator/compare/lockstep_record.h"
#include "simulator/device/device_profile.h"
#include "simulator/lowering/lowering.h"
#include "simulator/run/run_verdict.h"
#include "simulator/workers/worker_progress.h"

namespace stickler {

struct RunOptions {
  double timeout_seconds = 300;  // device runs in a model host are killed after this
  // Called as the model runs, in this process: only for runs that stay here (the CPU backends,
  // cpu-emulated, in_process). Nothing but data crosses to a model host.
  ExecutionObserver* observer = nullptr;
  // Compare the run with the model's CPU reference module call by module call, wherever it
  // runs (a model host included), into BackendRun::lockstep (module_errors.h).
  bool lockstep = false;
  // Run a device backend in this process instead of a model host (benchmarks, thresholds): a
  // runtime-abort fault then throws instead of aborting.
  bool in_process = false;
  // Set by the caller to stop the run: a model host is killed at once.
  const std::atomic<bool>* cancelled = nullptr;
  // Set by a model host for the run it serves: run here, record where the run is, and let a
  // runtime-abort fault abort this process, as the device's would.
  WorkerProgress* host_progress = nullptr;
};

// The outcome of one run on a backend.
struct BackendRun {
  // kBlocked: the model did not compile where it was to run (a model host lowers a placement
  // itself, so that its caller need not).
  enum class Status { kCompleted, kAborted, kTimedOut, kFailed, kCancelled, kBlocked };
  Status status = Status::kFailed;
  std::vector<c10::IValue> outputs;
  std::string message;     // why it did not complete
  std::string device_log;  // what the device process printed (an assertion, say)
  int signal = 0;
  // Where a device run had got to when it stopped.
  const torch::jit::Node* node = nullptr;
  const ModuleCall* module = nullptr;        // the innermost module of that node
  const ModuleCall* last_entered = nullptr;  // the last module boundary crossed inward
  int64_t nodes_run = 0;
  double seconds = 0.0;
  // A completed run asked to compare in lockstep: what the comparison found.
  std::optional<LockstepRecord> lockstep;
};

std::string runStatusName(BackendRun::Status status);
// The verdict of a run that did not complete: blocked, aborted, timed out, or failed.
RunVerdict incompleteRunVerdict(BackendRun::Status status);

// A model compiled for a backend: the lowering report, and, when it compiled, a runnable plan.
class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  const LoweringResult& lowering() const { return lowering_; }
  bool ok() const { return lowering_.ok(); }
  // Runs the compiled model on `inputs` (the forward's arguments). Only when ok().
  virtual BackendRun run(const std::vector<c10::IValue>& inputs,
                         const RunOptions& options) const = 0;

 protected:
  LoweringResult lowering_;
};

// The interface every backend implements (docs/backends.md): compile a graph for a device into
// a plan or a list of blockers, then run the plan with the interpreter's observer.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const BackendSpec& spec() const = 0;
  // The format device values are held in (fp32 for the CPU backends).
  virtual NumberFormat format() const = 0;
  virtual const DeviceProfile* profile() const { return nullptr; }
  // Lowers `model` with the modules of `placement` on the device, the rest on the CPU.
  virtual std::unique_ptr<CompiledModel> compile(const LoadedModel& model,
                                                 const Placement& placement) const = 0;
  // The same with only the first `pass_limit` applications of the lowering's passes (pass
  // bisection, like LLVM's -opt-bisect-limit); backends without passes compile as usual.
  virtual std::unique_ptr<CompiledModel> compileWithPassLimit(const LoadedModel& model,
                                                              const Placement& placement,
                                                              int64_t /*pass_limit*/) const {
    return compile(model, placement);
  }
};

std::unique_ptr<Backend> makeBackend(const BackendSpec& spec);

}  // namespace stickler
