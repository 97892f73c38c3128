#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/script.h>

#include "simulator/graph/module_table.h"

namespace stickler {

// One call of a module in the inlined graph: every call site has its own entry, so a module
// called twice (or once per loop iteration) is entered and exited each time.
struct ModuleCall {
  std::string path;  // "" never occurs: the root module is not a call
  std::string class_name;
  int depth = 1;  // 1 for modules called by the root module
  // Values computed outside the call and read inside it (not constants or parameters), and
  // values computed inside and read after it, in graph order.
  std::vector<const torch::jit::Value*> inputs;
  std::vector<const torch::jit::Value*> outputs;
};

// A read-only view of some of the interpreter's live values.
class ValueView {
 public:
  ValueView(std::vector<c10::IValue>* registers, const std::vector<uint32_t>* slots)
      : registers_(registers), slots_(slots) {}
  size_t size() const { return slots_->size(); }
  const c10::IValue& operator[](size_t i) const { return (*registers_)[(*slots_)[i]]; }

 protected:
  std::vector<c10::IValue>* registers_;
  const std::vector<uint32_t>* slots_;
};

// A view whose values an observer may replace before they flow on.
class MutableValueView : public ValueView {
 public:
  using ValueView::ValueView;
  void replace(size_t i, c10::IValue value) const {
    (*registers_)[(*slots_)[i]] = std::move(value);
  }
};

// The values an operator node is about to consume. Replacing one changes what this node sees
// only: the value in the interpreter's register, read by other nodes, stays as it was. This is
// how a device sees a value that crosses to it (rounded to its number format, say).
class NodeInputs {
 public:
  explicit NodeInputs(std::vector<c10::IValue>* stack) : stack_(stack) {}
  size_t size() const { return stack_->size(); }
  const c10::IValue& operator[](size_t i) const { return (*stack_)[i]; }
  void replace(size_t i, c10::IValue value) const { (*stack_)[i] = std::move(value); }

 private:
  std::vector<c10::IValue>* stack_;
};

// Called by the interpreter as it executes. Module boundaries come in execution order and
// nest properly; a module whose call produced no executable node has no boundary.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void onModuleEnter(const ModuleCall& /*call*/, const ValueView& /*inputs*/) {}
  // Before an operator node runs (not for prim::If / prim::Loop, whose blocks run nodes).
  virtual void beforeNode(const torch::jit::Node& /*node*/, const ModuleCall* /*module*/,
                          const NodeInputs& /*inputs*/) {}
  // `module` is the innermost module call the node belongs to, nullptr for the root module.
  virtual void onNode(const torch::jit::Node& /*node*/, const ModuleCall* /*module*/,
                      const ValueView& /*inputs*/, const MutableValueView& /*outputs*/) {}
  virtual void onModuleExit(const ModuleCall& /*call*/, const MutableValueView& /*outputs*/) {}
  // Whether to see the host's shape arithmetic that tracing leaves (aten::Int of a
  // prim::NumToTensor): an observer that does not may let the interpreter shortcut it.
  virtual bool seesShapeArithmetic() const { return true; }
};

struct CompiledProgram;

// Executes an inlined graph node by node. Compiling it once resolves constants and parameter
// reads, assigns registers and precomputes module boundaries; run() is then reentrant.
// Without an observer that replaces values, it calls the operators module.forward calls (so the
// outputs are the same, to the order of sums where the JIT's optimized plan picks other
// kernels), except for a model with bfloat16 or float16 weights, computed in float32 from them
// (sixteen_bit.h), and a weightless archive, computed on shapes where its weights are read
// (shape_only.h).
class Interpreter {
 public:
  Interpreter(const torch::jit::Module& module, std::shared_ptr<torch::jit::Graph> graph,
              const ModuleTable& modules);
  ~Interpreter();
  Interpreter(Interpreter&&) noexcept;
  Interpreter& operator=(Interpreter&&) noexcept;

  // `inputs` are the forward arguments without `self`.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs,
                               ExecutionObserver* observer = nullptr) const;

  const std::vector<ModuleCall>& moduleCalls() const;
  // Executable nodes (constants and parameter reads excluded), for cost accounting.
  size_t stepCount() const;
  // Whether the model's weights have no storage (shape_only.h): its outputs computed from
  // them are shapes without values.
  bool weightless() const;

 private:
  std::shared_ptr<torch::jit::Graph> graph_;  // the program points into its nodes
  const ModuleTable* modules_;
  std::unique_ptr<CompiledProgram> program_;
};

}  // namespace stickler
