// The device backends: cpu-emulated:<dtype> and spyre-sim:<profile>. Both run the CPU
// interpreter with DeviceExecution making values behave as on the device.
#include "simulator/backends/device_backends.h"

#include <chrono>

#include <torch/csrc/jit/serialization/pickle.h>

#include "simulator/backends/device_execution.h"
#include "simulator/backends/worker.h"

namespace stickler {
namespace {

class DeviceCompiled : public CompiledModel {
 public:
  DeviceCompiled(const LoadedModel& model, LoweringResult lowering, const DeviceProfile& profile,
                 NumberFormat format, bool narrow_integers, bool isolate)
      : model_(model), isolate_(isolate) {
    lowering_ = std::move(lowering);
    if (ok())
      plan_ = std::make_unique<DevicePlan>(model, lowering_, profile, format, narrow_integers);
    nodes_ = allNodes(*model.graph);
  }

  BackendRun run(const std::vector<c10::IValue>& inputs, const RunOptions& options) const override {
    if (!plan_) throw std::logic_error("run() on a model that did not compile");
    return isolate_ && !options.in_process ? runInWorkerProcess(inputs, options)
                                           : runHere(inputs, options);
  }

 private:
  BackendRun runHere(const std::vector<c10::IValue>& inputs, const RunOptions& options) const {
    BackendRun run;
    DeviceExecution device(*plan_, options.observer, nullptr, /*may_abort=*/false);
    device.setModuleCalls(&model_.interpreter->moduleCalls());
    const auto start = std::chrono::steady_clock::now();
    run.outputs = model_.interpreter->run(inputs, &device);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.status = BackendRun::Status::kCompleted;
    return run;
  }

  BackendRun runInWorkerProcess(const std::vector<c10::IValue>& inputs,
                                const RunOptions& options) const {
    const auto& calls = model_.interpreter->moduleCalls();
    const WorkerOutcome outcome = runInWorker(
        [&](WorkerProgress& progress) {
          DeviceExecution device(*plan_, options.observer, &progress, /*may_abort=*/true);
          device.setModuleCalls(&calls);
          const auto outputs = model_.interpreter->run(inputs, &device);
          const auto bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(outputs));
          return std::string(bytes.begin(), bytes.end());
        },
        options.timeout_seconds, options.cancelled);
    BackendRun run;
    run.seconds = outcome.seconds;
    run.message = outcome.message;
    run.device_log = outcome.stderr_text;
    run.signal = outcome.signal;
    run.nodes_run = outcome.nodes_run;
    if (outcome.node >= 0 && outcome.node < static_cast<int64_t>(nodes_.size())) {
      run.node = nodes_[outcome.node];
    }
    auto callAt = [&](int64_t index) -> const ModuleCall* {
      return index >= 0 && index < static_cast<int64_t>(calls.size()) ? &calls[index] : nullptr;
    };
    run.module = callAt(outcome.module_call);
    run.last_entered = callAt(outcome.last_entered);
    switch (outcome.status) {
      case WorkerOutcome::Status::kCompleted: {
        const std::vector<char> bytes(outcome.payload.begin(), outcome.payload.end());
        const c10::IValue outputs = torch::jit::pickle_load(bytes);  // outlives the loop
        for (const auto& value : outputs.toTupleRef().elements()) run.outputs.push_back(value);
        run.status = BackendRun::Status::kCompleted;
        break;
      }
      case WorkerOutcome::Status::kAborted:
        run.status = BackendRun::Status::kAborted;
        break;
      case WorkerOutcome::Status::kTimedOut:
        run.status = BackendRun::Status::kTimedOut;
        break;
      case WorkerOutcome::Status::kFailed:
        run.status = BackendRun::Status::kFailed;
        break;
      case WorkerOutcome::Status::kCancelled:
        run.status = BackendRun::Status::kCancelled;
        break;
    }
    return run;
  }

  const LoadedModel& model_;
  bool isolate_;
  std::unique_ptr<DevicePlan> plan_;
  std::vector<const torch::jit::Node*> nodes_;
};

class EmulatedBackend : public Backend {
 public:
  explicit EmulatedBackend(BackendSpec spec) : spec_(std::move(spec)) {
    // Every operator is a device kernel of its own; no layout rules, no faults.
    profile_.name = spec_.text;
    profile_.format = spec_.format;
    profile_.default_support = OpSupport::kNative;
  }
  const BackendSpec& spec() const override { return spec_; }
  NumberFormat format() const override { return spec_.format; }
  std::unique_ptr<CompiledModel> compile(const LoadedModel& model,
                                         const Placement& placement) const override {
    LoweringOptions options;
    options.check_layout = false;
    options.apply_profile_ops = false;
    return std::make_unique<DeviceCompiled>(model, lower(model, profile_, placement, options),
                                            profile_, spec_.format, /*narrow_integers=*/false,
                                            /*isolate=*/false);
  }

 private:
  BackendSpec spec_;
  DeviceProfile profile_;
};

class SpyreSimBackend : public Backend {
 public:
  explicit SpyreSimBackend(BackendSpec spec)
      : spec_(std::move(spec)), profile_(loadProfile(spec_.profile)) {}
  const BackendSpec& spec() const override { return spec_; }
  NumberFormat format() const override { return profile_.format; }
  const DeviceProfile* profile() const override { return &profile_; }
  std::unique_ptr<CompiledModel> compile(const LoadedModel& model,
                                         const Placement& placement) const override {
    return compileWithPassLimit(model, placement, -1);
  }
  std::unique_ptr<CompiledModel> compileWithPassLimit(const LoadedModel& model,
                                                      const Placement& placement,
                                                      int64_t pass_limit) const override {
    LoweringOptions options;
    options.pass_limit = pass_limit;
    return std::make_unique<DeviceCompiled>(model, lower(model, profile_, placement, options),
                                            profile_, profile_.format, profile_.narrow_integers,
                                            /*isolate=*/true);
  }

 private:
  BackendSpec spec_;
  DeviceProfile profile_;
};

}  // namespace

std::unique_ptr<Backend> makeEmulatedBackend(const BackendSpec& spec) {
  return std::make_unique<EmulatedBackend>(spec);
}

std::unique_ptr<Backend> makeSpyreSimBackend(const BackendSpec& spec) {
  return std::make_unique<SpyreSimBackend>(spec);
}

}  // namespace stickler
