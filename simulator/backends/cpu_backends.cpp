// The CPU backends: cpu (fp32, the reference) and cpu64 (float64).
#include "simulator/backends/cpu_backends.h"

#include <chrono>

#include "simulator/backends/float64_graph.h"

namespace stickler {
namespace {

class CpuCompiled : public CompiledModel {
 public:
  CpuCompiled(const LoadedModel& model, const Placement&) : model_(model) {}

  BackendRun run(const std::vector<c10::IValue>& inputs, const RunOptions& options) const override {
    BackendRun run;
    const auto start = std::chrono::steady_clock::now();
    run.outputs = model_.interpreter->run(inputs, options.observer);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.status = BackendRun::Status::kCompleted;
    return run;
  }

 private:
  const LoadedModel& model_;
};

class Cpu64Compiled : public CompiledModel {
 public:
  Cpu64Compiled(const LoadedModel& model, const Placement&)
      : module_(toFloat64Module(model.module)),
        interpreter_(module_, toFloat64Graph(*model.graph), model.modules) {}

  BackendRun run(const std::vector<c10::IValue>& inputs, const RunOptions& options) const override {
    BackendRun run;
    std::vector<c10::IValue> converted;
    converted.reserve(inputs.size());
    for (const auto& input : inputs) converted.push_back(toFloat64Value(input));
    const auto start = std::chrono::steady_clock::now();
    run.outputs = interpreter_.run(std::move(converted), options.observer);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.status = BackendRun::Status::kCompleted;
    return run;
  }

 private:
  torch::jit::Module module_;
  Interpreter interpreter_;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(BackendSpec spec) : spec_(std::move(spec)) {}
  const BackendSpec& spec() const override { return spec_; }
  NumberFormat format() const override { return NumberFormat::kFloat32; }
  std::unique_ptr<CompiledModel> compile(const LoadedModel& model,
                                         const Placement& placement) const override {
    if (spec_.kind == BackendSpec::Kind::kCpu64) {
      return std::make_unique<Cpu64Compiled>(model, placement);
    }
    return std::make_unique<CpuCompiled>(model, placement);
  }

 private:
  BackendSpec spec_;
};

}  // namespace

std::unique_ptr<Backend> makeCpuBackend(const BackendSpec& spec) {
  return std::make_unique<CpuBackend>(spec);
}

}  // namespace stickler
