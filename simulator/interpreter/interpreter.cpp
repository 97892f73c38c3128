#include "simulator/interpreter/interpreter.h"
#include "simulator/support/text_format.h"

#include <string>

#include "simulator/graph/node_info.h"
#include "simulator/interpreter/program.h"
#include "simulator/interpreter/shape_only.h"
#include "simulator/interpreter/sixteen_bit.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"

namespace stickler {
namespace {

using torch::jit::Stack;

// Runs a compiled program on one set of registers.
class Execution {
 public:
  Execution(const CompiledProgram& program, const ModuleTable& modules, ExecutionObserver* observer)
      : program_(program),
        modules_(modules),
        observer_(observer),
        shortcuts_(observer == nullptr || !observer->seesShapeArithmetic()),
        registers_(program.initial_registers) {}

  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) {
    const auto& main = program_.main;
    if (inputs.size() + 1 != main.inputs.size()) {
      throw UserError("the model's forward takes " + std::to_string(main.inputs.size() - 1) +
                      " inputs, but " + std::to_string(inputs.size()) + " were given");
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      registers_[main.inputs[i + 1]] = std::move(inputs[i]);
    runBlock(main);
    std::vector<c10::IValue> outputs;
    outputs.reserve(main.outputs.size());
    for (uint32_t reg : main.outputs) outputs.push_back(registers_[reg]);
    return outputs;
  }

 private:
  void crossBoundaries(const std::vector<Boundary>& boundaries) {
    if (observer_ == nullptr) return;
    for (const Boundary& boundary : boundaries) {
      const ModuleCall& call = program_.calls[boundary.call];
      if (boundary.enter) {
        observer_->onModuleEnter(call,
                                 ValueView(&registers_, &program_.call_inputs[boundary.call]));
      } else {
        observer_->onModuleExit(
            call, MutableValueView(&registers_, &program_.call_outputs[boundary.call]));
      }
    }
  }

  void runBlock(const BlockCode& block) {
    for (const Step& step : block.steps) {
      clock_.tick();
      if (!step.boundaries.empty()) crossBoundaries(step.boundaries);
      switch (step.kind) {
        case StepKind::kOperation:
          if (!runOperation(step)) {
            for (uint32_t reg : step.release) registers_[reg] = c10::IValue();
            continue;
          }
          break;
        case StepKind::kIf:
          runIf(step);
          break;
        case StepKind::kLoop:
          runLoop(step);
          break;
      }
      if (observer_ != nullptr) {
        observer_->onNode(*step.node, step.call < 0 ? nullptr : &program_.calls[step.call],
                          ValueView(&registers_, &step.inputs),
                          MutableValueView(&registers_, &step.outputs));
      }
      for (uint32_t reg : step.release) registers_[reg] = c10::IValue();
    }
    if (!block.exits_at_end.empty()) crossBoundaries(block.exits_at_end);
  }

  void releaseBlockEnd(const BlockCode& block) {
    for (uint32_t reg : block.release_at_end) registers_[reg] = c10::IValue();
  }

  // Whether `step` runs for real (false: shortcut, and the observer does not see it).
  bool runOperation(const Step& step) {
    if (shortcuts_) {
      if (step.skip_unobserved) return false;
      if (step.scalar_source >= 0) {
        registers_[step.outputs[0]] = registers_[step.scalar_source];
        return false;
      }
    }
    stack_.clear();
    if (observer_ == nullptr) {
      // Moving a value read for the last time spares a reference count round trip; an
      // observer still needs to see the inputs after the node ran.
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        auto& value = registers_[step.inputs[i]];
        if (step.movable[i]) {
          stack_.push_back(std::move(value));
        } else {
          stack_.push_back(value);
        }
      }
    } else {
      for (uint32_t reg : step.inputs) stack_.push_back(registers_[reg]);
      observer_->beforeNode(*step.node, step.call < 0 ? nullptr : &program_.calls[step.call],
                            NodeInputs(&stack_));
    }
    try {
      if (step.may_run_linear_in_slices && runLinearInSlices(stack_, widened_)) {
        // A large 16-bit weight, widened a slice at a time (sixteen_bit.h).
      } else {
        // After the observer: what it put in place of a weight (a device's copy) is widened.
        if (!step.widening.empty()) widenInputs(step.widening, stack_, widened_);
        if (step.may_run_on_shapes && readsShapesOnly(stack_)) {
          runOnShapes(step.operation, stack_);
        } else {
          step.operation(stack_);
        }
      }
    } catch (const std::exception& e) {
      throw UserError("running " + describeNode(*step.node, modules_) +
                      " failed: " + firstLine(e.what()));
    }
    if (!step.widening.empty()) widened_.operatorDone(stack_);
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      registers_[step.outputs[i]] = std::move(stack_[i]);
    }
    return true;
  }

  void runIf(const Step& step) {
    const BlockCode& branch = step.blocks[registers_[step.inputs[0]].toBool() ? 0 : 1];
    runBlock(branch);
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      registers_[step.outputs[i]] = registers_[branch.outputs[i]];
    }
    releaseBlockEnd(branch);
  }

  void runLoop(const Step& step) {
    const BlockCode& body = step.blocks[0];
    const int64_t max_trips = registers_[step.inputs[0]].toInt();
    bool condition = registers_[step.inputs[1]].toBool();
    std::vector<c10::IValue> carried;
    carried.reserve(step.outputs.size());
    for (size_t i = 2; i < step.inputs.size(); ++i) carried.push_back(registers_[step.inputs[i]]);
    for (int64_t trip = 0; condition && trip < max_trips; ++trip) {
      clock_.tick();  // a body may have no step at all: `while True: pass`
      registers_[body.inputs[0]] = trip;
      for (size_t i = 0; i < carried.size(); ++i) {
        registers_[body.inputs[i + 1]] = std::move(carried[i]);
      }
      runBlock(body);
      condition = registers_[body.outputs[0]].toBool();
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = registers_[body.outputs[i + 1]];
      releaseBlockEnd(body);
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      registers_[step.outputs[i]] = std::move(carried[i]);
    }
  }

  const CompiledProgram& program_;
  const ModuleTable& modules_;
  ExecutionObserver* observer_;
  bool shortcuts_;
  std::vector<c10::IValue> registers_;
  Stack stack_;
  WideningBuffers widened_{c10::kFloat};  // used by programs of 16-bit models only
  ExecutionClock clock_;  // this thread's limit on user code, from when the run started
};

}  // namespace

Interpreter::Interpreter(const torch::jit::Module& module, std::shared_ptr<torch::jit::Graph> graph,
                         const ModuleTable& modules)
    : graph_(std::move(graph)), modules_(&modules) {
  program_ = compileProgram(module, *graph_, modules);
}

Interpreter::~Interpreter() = default;
Interpreter::Interpreter(Interpreter&&) noexcept = default;
Interpreter& Interpreter::operator=(Interpreter&&) noexcept = default;

std::vector<c10::IValue> Interpreter::run(std::vector<c10::IValue> inputs,
                                          ExecutionObserver* observer) const {
  // No autograd: intermediates die as soon as the last step that reads them is done.
  c10::InferenceMode inference;
  return Execution(*program_, *modules_, observer).run(std::move(inputs));
}

const std::vector<ModuleCall>& Interpreter::moduleCalls() const {
  return program_->calls;
}

size_t Interpreter::stepCount() const {
  return program_->step_count;
}

bool Interpreter::weightless() const {
  return program_->weightless;
}

}  // namespace stickler
