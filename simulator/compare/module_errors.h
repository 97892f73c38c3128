// Per-module error in lockstep: the reference run and a device run of the same graph advance
// together, the reference on a thread of its own. At each module call's exit the reference
// hands a copy of its outputs over and goes on, at most kLockstepDepth module calls ahead of the
// device run, which compares them when it reaches the same exit: at most that many module calls'
// reference activations are held at any time (DESIGN.md: compare in lockstep), and the two runs
// overlap instead of waiting on each other at every boundary. The device run may live in a model
// host: its comparer is then made there (RunOptions::lockstep), runs the host's own
// reference, and sends the record back with the run's outputs (an aborted run sends none; the
// abort itself is what localization reports then).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "simulator/compare/lockstep_record.h"
#include "simulator/interpreter/interpreter.h"

namespace stickler {

// How many module calls the reference may run ahead of the compared run.
inline constexpr size_t kLockstepDepth = 2;

ModuleErrors compareActivations(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& observed);

class LockstepChannel;

// Compares the run it observes with `reference`'s run on the same inputs, module call by module
// call, into record().
class LockstepComparer : public ExecutionObserver {
 public:
  LockstepComparer(const Interpreter& reference, std::vector<c10::IValue> inputs);
  ~LockstepComparer() override;
  LockstepComparer(const LockstepComparer&) = delete;
  LockstepComparer& operator=(const LockstepComparer&) = delete;

  void onModuleEnter(const ModuleCall& call, const ValueView& inputs) override;
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override;
  // Notes operators whose results turn non-finite from inputs that were not (NaN from inputs
  // without NaN, inf from finite inputs), wherever they are, the root's own included.
  void onNode(const torch::jit::Node& node, const ModuleCall* module, const ValueView& inputs,
              const MutableValueView& outputs) override;
  bool seesShapeArithmetic() const override { return false; }
  // What the run observed so far: complete once it has returned.
  const LockstepRecord& record() const { return record_; }

 private:
  void start();

  const Interpreter& reference_;
  std::vector<c10::IValue> inputs_;
  std::unique_ptr<LockstepChannel> channel_;
  LockstepRecord record_;
  bool started_ = false;
  bool in_step_ = true;  // false once the two runs left different module calls
  std::unordered_map<const torch::jit::Node*, int64_t> positions_;  // in allNodes() order
};

// An operator whose result turned non-finite in a compared run, in the order they ran.
struct NonFiniteCandidate {
  const torch::jit::Node* node = nullptr;  // of the compared run's graph
  bool nan = false;                        // NaN from inputs without; else inf from finite
  int64_t elements = 0;
};

// How many such operators a comparer notes: the reference decides which was the first whose
// reference result is finite, and a device's first few are where that is.
inline constexpr int kNonFiniteCandidates = 8;

// The candidates a comparer noted, as nodes of `graph` (the compared run's graph: nodes are
// noted by position, as the run may have been a model host's).
std::vector<NonFiniteCandidate> nonFiniteCandidates(const LockstepRecord& record,
                                                    const torch::jit::Graph& graph);

// The float tensors among a module call's outputs, flattened, fp32 and contiguous.
std::vector<at::Tensor> floatOutputs(const MutableValueView& outputs);

}  // namespace stickler
