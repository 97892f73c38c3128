// Per-module error in lockstep: the reference run writes each module call's outputs to a
// stream as it goes, and a device run reads the stream back at the same boundaries and
// compares, so neither run holds more than one module's activations (DESIGN.md: compare in
// lockstep). The device run may live in a worker process that can die: its comparer appends
// one line per module call to a file as it goes, so an abort keeps what was measured.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "simulator/interpreter/interpreter.h"

namespace stickler {

// How far a module call's outputs (its float tensors, together) are from the reference's.
struct ModuleErrors {
  int64_t call = -1;  // index into the interpreter's module calls
  double max_abs = 0.0;
  double mean_abs = 0.0;
  double cosine = 1.0;
  double rel_l2 = 0.0;      // |device - reference| / |reference|
  double sqnr_db = 0.0;     // 10 log10(|reference|^2 / |device - reference|^2); inf when equal
  bool non_finite = false;  // NaN or inf where the reference is finite
};

ModuleErrors compareActivations(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& observed);

// Writes every module call's float outputs, in execution order, to `path`.
class ActivationRecorder : public ExecutionObserver {
 public:
  ActivationRecorder(const std::vector<ModuleCall>& calls, const std::string& path);
  ~ActivationRecorder() override;
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override;

 private:
  const std::vector<ModuleCall>& calls_;
  std::FILE* file_ = nullptr;
};

// Reads a recorder's stream in step with a run of the same graph, and appends one line of
// ModuleErrors per module call to `errors_path`.
class LockstepComparer : public ExecutionObserver {
 public:
  LockstepComparer(const std::vector<ModuleCall>& calls, const std::string& reference_path,
                   const std::string& errors_path);
  ~LockstepComparer() override;
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override;

 private:
  const std::vector<ModuleCall>& calls_;
  std::FILE* reference_ = nullptr;
  std::FILE* errors_ = nullptr;
  bool in_step_ = true;  // false once the two runs left different module calls
};

// The lines a comparer wrote, in execution order.
std::vector<ModuleErrors> readModuleErrors(const std::string& errors_path);

}  // namespace stickler
