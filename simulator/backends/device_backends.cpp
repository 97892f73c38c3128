// The device backends: cpu-emulated:<dtype> and spyre-sim:<profile>. Both run the CPU
// interpreter with DeviceExecution making values behave as on the device.
#include "simulator/backends/device_backends.h"

#include <chrono>
#include <mutex>
#include <optional>

#include "simulator/backends/device_execution.h"
#include "simulator/backends/model_host_client.h"
#include "simulator/compare/module_errors.h"

namespace stickler {
namespace {

class DeviceCompiled : public CompiledModel {
 public:
  DeviceCompiled(const LoadedModel& model, LoweringResult lowering,
                 std::shared_ptr<const DeviceProfile> profile, NumberFormat format,
                 bool narrow_integers, std::optional<DeviceRunSpec> hosted)
      : model_(model),
        hosted_(std::move(hosted)),
        profile_(std::move(profile)),
        format_(format),
        narrow_integers_(narrow_integers) {
    lowering_ = std::move(lowering);
  }

  BackendRun run(const std::vector<c10::IValue>& inputs, const RunOptions& options) const override {
    if (!ok()) throw std::logic_error("run() on a model that did not compile");
    if (hosted_ && !options.in_process && options.host_progress == nullptr) {
      if (options.observer != nullptr) {
        throw std::logic_error("an observer cannot follow a run to its model host");
      }
      return runOnModelHost(model_, *hosted_, inputs, options);
    }
    return runHere(inputs, options);
  }

 private:
  BackendRun runHere(const std::vector<c10::IValue>& inputs, const RunOptions& options) const {
    std::unique_ptr<LockstepComparer> comparer;
    ExecutionObserver* observer = options.observer;
    if (options.lockstep) {
      if (observer != nullptr) throw std::logic_error("a run takes an observer or lockstep");
      comparer = std::make_unique<LockstepComparer>(*model_.interpreter, inputs);
      observer = comparer.get();
    }
    BackendRun run;
    // In a model host the device may abort, as the device's process would; elsewhere an abort
    // fault throws (a benchmark's run in its own process).
    DeviceExecution device(plan(), observer, options.host_progress,
                           /*may_abort=*/options.host_progress != nullptr);
    device.setModuleCalls(&model_.interpreter->moduleCalls());
    const auto start = std::chrono::steady_clock::now();
    run.outputs = model_.interpreter->run(inputs, &device);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.status = BackendRun::Status::kCompleted;
    if (comparer) run.lockstep = comparer->record();
    return run;
  }

  // Made at the first run here: a run that goes to the model's host needs only the lowering
  // (localization compiles a placement per trial, and its host makes its own plan).
  const DevicePlan& plan() const {
    std::call_once(plan_made_, [this] {
      plan_ = std::make_unique<DevicePlan>(model_, lowering_, *profile_, format_, narrow_integers_);
    });
    return *plan_;
  }

  const LoadedModel& model_;
  std::optional<DeviceRunSpec> hosted_;           // set: runs go to the model's host
  std::shared_ptr<const DeviceProfile> profile_;  // the plan's faults point into it
  NumberFormat format_;
  bool narrow_integers_;
  mutable std::once_flag plan_made_;
  mutable std::unique_ptr<DevicePlan> plan_;
};

class EmulatedBackend : public Backend {
 public:
  explicit EmulatedBackend(BackendSpec spec) : spec_(std::move(spec)) {
    // Every operator is a device kernel of its own; no layout rules, no faults.
    auto profile = std::make_shared<DeviceProfile>();
    profile->name = spec_.text;
    profile->format = spec_.format;
    profile->default_support = OpSupport::kNative;
    profile_ = std::move(profile);
  }
  const BackendSpec& spec() const override { return spec_; }
  NumberFormat format() const override { return spec_.format; }
  std::unique_ptr<CompiledModel> compile(const LoadedModel& model,
                                         const Placement& placement) const override {
    LoweringOptions options;
    options.check_layout = false;
    options.apply_profile_ops = false;
    return std::make_unique<DeviceCompiled>(model, lower(model, *profile_, placement, options),
                                            profile_, spec_.format, /*narrow_integers=*/false,
                                            std::nullopt);
  }

 private:
  BackendSpec spec_;
  std::shared_ptr<const DeviceProfile> profile_;
};

class SpyreSimBackend : public Backend {
 public:
  explicit SpyreSimBackend(BackendSpec spec)
      : spec_(std::move(spec)), profile_(sharedProfile(spec_.profile)) {}
  const BackendSpec& spec() const override { return spec_; }
  NumberFormat format() const override { return profile_->format; }
  const DeviceProfile* profile() const override { return profile_.get(); }
  std::unique_ptr<CompiledModel> compile(const LoadedModel& model,
                                         const Placement& placement) const override {
    return compileWithPassLimit(model, placement, -1);
  }
  std::unique_ptr<CompiledModel> compileWithPassLimit(const LoadedModel& model,
                                                      const Placement& placement,
                                                      int64_t pass_limit) const override {
    LoweringOptions options;
    options.pass_limit = pass_limit;
    return std::make_unique<DeviceCompiled>(model, lower(model, *profile_, placement, options),
                                            profile_, profile_->format, profile_->narrow_integers,
                                            DeviceRunSpec{spec_.text, placement, pass_limit});
  }

 private:
  BackendSpec spec_;
  std::shared_ptr<const DeviceProfile> profile_;
};

}  // namespace

std::unique_ptr<Backend> makeEmulatedBackend(const BackendSpec& spec) {
  return std::make_unique<EmulatedBackend>(spec);
}

std::unique_ptr<Backend> makeSpyreSimBackend(const BackendSpec& spec) {
  return std::make_unique<SpyreSimBackend>(spec);
}

}  // namespace stickler
