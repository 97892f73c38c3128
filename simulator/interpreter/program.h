#pragma once

// The interpreter's compiled form of an inlined graph. Internal to simulator/interpreter.

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/script.h>

#include "simulator/graph/module_table.h"
#include "simulator/interpreter/interpreter.h"
#include "simulator/interpreter/sixteen_bit.h"

namespace stickler {

enum class StepKind : uint8_t { kOperation, kIf, kLoop };

// A module boundary crossed before a step runs (or at the end of a block).
struct Boundary {
  bool enter = false;
  uint32_t call = 0;
};

struct BlockCode;

// One executable node: an operator call, or a prim::If / prim::Loop with its blocks.
struct Step {
  StepKind kind = StepKind::kOperation;
  const torch::jit::Node* node = nullptr;
  mutable torch::jit::Operation operation = nullptr;  // LibTorch declares operator() non-const
  int32_t call = -1;  // innermost module call, -1 for the root module
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<uint32_t> release;  // registers whose last use is this step
  std::vector<uint8_t> movable;   // per input: read last here, so it may be moved, not copied
  // Traced graphs turn every size into aten::Int(prim::NumToTensor(n)), which is n. Without an
  // observer to show the tensor in between, such an aten::Int copies n and the NumToTensor
  // whose only readers are those is skipped, as the JIT's peephole pass does.
  int64_t scalar_source = -1;    // register of n for such an aten::Int
  bool skip_unobserved = false;  // a NumToTensor read only by such aten::Ints
  std::vector<Boundary> boundaries;
  std::vector<BlockCode> blocks;
  // In a program of a 16-bit model, what the operator reads in float32 (sixteen_bit.h); empty
  // otherwise, and for operators that only move data.
  std::vector<InputWidening> widening;
  bool may_run_linear_in_slices = false;  // a linear in such a program (sixteen_bit.h)
  // In a weightless archive's program: an operator computing on tensors, which runs on shapes
  // when it reads a weight without storage or a value computed from one (shape_only.h).
  bool may_run_on_shapes = false;
};

// A block: the graph itself, a branch of an If, or a Loop's body.
struct BlockCode {
  std::vector<uint32_t> inputs;
  std::vector<Step> steps;
  std::vector<uint32_t> outputs;
  std::vector<uint32_t> release_at_end;  // block values read only by the block's return
  std::vector<Boundary> exits_at_end;    // back to the scope of the node owning the block
};

// Steps, registers (constants and parameters preloaded) and module calls of one graph.
struct CompiledProgram {
  BlockCode main;
  std::vector<c10::IValue> initial_registers;  // constants and parameters already in place
  std::vector<ModuleCall> calls;
  std::vector<std::vector<uint32_t>> call_inputs;  // registers of ModuleCall::inputs
  std::vector<std::vector<uint32_t>> call_outputs;
  c10::intrusive_ptr<c10::ivalue::Object> self;
  size_t step_count = 0;
  bool sixteen_bit_in_float32 = false;  // the model holds 16-bit floating weights
  bool weightless = false;  // a weight has no storage: weight-derived values are shapes only
};

// Compiles `graph` (inlined, with module scopes) of `module` into a program.
std::unique_ptr<CompiledProgram> compileProgram(const torch::jit::Module& module,
                                                torch::jit::Graph& graph,
                                                const ModuleTable& modules);

}  // namespace stickler
