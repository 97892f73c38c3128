// A region of a model's inlined graph run on its own: some of its nodes, fed the values they
// read from the rest of the model, with the model's weights as constants. In float64 the
// region's weights alone are widened, so checking the part of a large model an adapter
// changed costs that part, not the model.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

#include "simulator/interpreter/interpreter.h"
#include "simulator/interpreter/widening_buffers.h"

namespace stickler {

struct LoadedModel;

enum class Precision { kFloat32, kFloat64 };

class RegionProgram {
 public:
  // `nodes`: top-level nodes of `model.graph`, in graph order (their blocks come with them).
  // `inputs`: the values the nodes read from outside the region, other than constants and
  // weights, in the order run() takes them. `outputs`: values the region defines (or constants
  // it reads) that run() returns, in order. UserError when a value the nodes read is neither.
  RegionProgram(const LoadedModel& model, const std::vector<const torch::jit::Node*>& nodes,
                const std::vector<const torch::jit::Value*>& inputs,
                const std::vector<const torch::jit::Value*>& outputs, Precision precision);
  ~RegionProgram();
  RegionProgram(RegionProgram&&) noexcept;

  // Runs the region on `inputs` (as the float32 model sees them; widened in float64). Each
  // run gets copies of the tensors, so in-place operators in the region cannot change them.
  // In float64, a run notices `cancelled` between operators and throws Cancelled
  // (simulator/support/task_control.h). `buffers` (float64; one set per thread, reused from
  // one run to the next) receive the weights as they are widened.
  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs,
                               WideningBuffers* buffers = nullptr,
                               const std::atomic<bool>* cancelled = nullptr) const;

 private:
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unique_ptr<Interpreter> interpreter_;
  Precision precision_;
};

// The forward's arguments for input draw `draw` of an equivalence check: the example inputs
// for draw 0, then values drawn as the model card says from the seeds after the model's
// (model.seed + 1, + 2, ...)
std::vector<c10::IValue> drawInputs(const LoadedModel& model, int draw);

// What feeds a region on each input draw: the captured values, in the order asked for.
struct CapturedDraws {
  std::vector<std::vector<c10::IValue>> draws;
};

// Runs `model` on draws [first, last) side by side, each run stopping as soon as it has produced
// `values` (values of its graph), and returns them per draw (draws before `first` left empty).
CapturedDraws captureDraws(const LoadedModel& model,
                           const std::vector<const torch::jit::Value*>& values, int first,
                           int last);

// Floating tensors (alone, or in lists and tuples) widened to float64; anything else as is.
c10::IValue widenToFloat64(const c10::IValue& value);

// Records, as the model runs, the values of some of its graph's top-level values: graph inputs
// and outputs of top-level nodes. Tensors are copied, so later in-place operators leave them.
class ValueCapture : public ExecutionObserver {
 public:
  // Thrown from the run, with `stop_when_complete`, once every wanted value is captured: what
  // the run would compute after that is not needed.
  struct Complete {};

  explicit ValueCapture(std::vector<const torch::jit::Value*> wanted,
                        bool stop_when_complete = false);
  // The graph inputs among the wanted values, from the forward's arguments.
  void captureInputs(const std::vector<c10::IValue>& forward_inputs);
  bool complete() const { return missing_ == 0; }
  void onNode(const torch::jit::Node& node, const ModuleCall* module, const ValueView& inputs,
              const MutableValueView& outputs) override;
  // The captured values in the order they were asked for; UserError when one never appeared.
  std::vector<c10::IValue> values() const;

 private:
  std::vector<const torch::jit::Value*> wanted_;
  std::unordered_map<const torch::jit::Value*, std::optional<c10::IValue>> captured_;
  size_t missing_ = 0;
  bool stop_when_complete_;
};

}  // namespace stickler
