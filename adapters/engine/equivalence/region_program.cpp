#include "adapters/engine/equivalence/region_program.h"

#include <algorithm>
#include <functional>

#include "simulator/backends/float64_graph.h"
#include "simulator/graph/attribute_constants.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/interpreter/sixteen_bit.h"
#include "simulator/support/concurrent_tasks.h"
#include "simulator/support/errors.h"
#include "simulator/support/task_control.h"

namespace stickler {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

namespace {

c10::IValue copied(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor().clone();
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorVector()) list.push_back(tensor.clone());
    return list;
  }
  return value;
}

// Builds the region's graph: `self`, one input per boundary value, clones of the region's nodes,
// and the outputs; the weights it reads become constants.
class RegionBuilder {
 public:
  explicit RegionBuilder(const LoadedModel& model)
      : model_(model), graph_(std::make_shared<torch::jit::Graph>()) {}

  std::shared_ptr<torch::jit::Graph> build(const std::vector<const Node*>& nodes,
                                           const std::vector<const Value*>& inputs,
                                           const std::vector<const Value*>& outputs) {
    Value* self = graph_->addInput("self");
    self->setType(model_.module.type());
    for (const Value* input : inputs) {
      Value* parameter = graph_->addInput();
      parameter->setType(input->type());
      env_[input] = parameter;
    }
    for (const Node* node : nodes) {
      Node* copy = graph_->insertNode(graph_->createClone(
          const_cast<Node*>(node), [&](Value* value) { return lookup(value); }));
      for (size_t i = 0; i < copy->outputs().size(); ++i) env_[node->output(i)] = copy->output(i);
    }
    for (const Value* output : outputs) graph_->registerOutput(lookup(output));
    // Weights as constants, so that float64 widens the region's weights and no others.
    attributesToConstants(*graph_, c10::IValue(model_.module._ivalue()));
    return graph_;
  }

 private:
  // A value the cloned nodes read: a boundary input, a value of the region, or a constant or
  // weight, which becomes a constant of the region's graph.
  Value* lookup(const Value* value) {
    if (auto found = env_.find(value); found != env_.end()) return found->second;
    const Node* producer = value->node();
    if (producer->kind() == prim::Constant) {
      // A clone keeps the constant's attributes, its float64 twin among them.
      Node* copy = graph_->insertNode(graph_->createClone(
          const_cast<Node*>(producer), [](Value* v) { return v; }, /*copy_blocks=*/false));
      return env_[value] = copy->output();
    }
    if (producer->kind() == prim::GetAttr) {
      // The same read from the region's own self; build() then makes weights constants.
      Value* owner = lookup(producer->input());
      Node* read = graph_->insertNode(graph_->createClone(
          const_cast<Node*>(producer), [owner](Value*) { return owner; }, false));
      return env_[value] = read->output();
    }
    if (value == model_.graph->inputs().at(0)) return env_[value] = graph_->inputs().at(0);
    throw UserError("the region reads %" + value->debugName() + " (from " +
                    producer->kind().toQualString() +
                    "), which is neither one of its inputs nor a constant or weight");
  }

  const LoadedModel& model_;
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unordered_map<const Value*, Value*> env_;
};

// Widens the float32 (and bfloat16, float16) tensors an operator reads (weights and constants: in
// the float64 graph everything computed is float64 already) just before it reads them, into
// float64 buffers reused from one operator to the next (widening_buffers.h).
class WidenAsRead : public ExecutionObserver {
 public:
  WidenAsRead(WideningBuffers& buffers, const std::atomic<bool>* cancelled)
      : buffers_(buffers), cancelled_(cancelled) {}

  void beforeNode(const Node& node, const ModuleCall*, const NodeInputs& inputs) override {
    if (cancelled_ != nullptr && cancelled_->load()) throw Cancelled();
    // A gather, slice or view computes nothing: it runs on the stored values, and what it
    // selects is widened where it is computed with (an 8B model's embedding table would be
    // 4.2 GB in float64 for the 128 rows a forward reads).
    const std::vector<InputWidening> widening = wideningFor(node);
    if (node.kind().is_aten() && widening.empty()) return;
    buffers_.operatorStarts();
    for (size_t i = 0; i < inputs.size(); ++i) {
      // What an operator writes into (append's list) is widened already, as everything the
      // region computes is: a widened copy would take the write instead.
      if (i < widening.size() && widening[i] == InputWidening::kKeep) continue;
      const c10::IValue& input = inputs[i];
      if (input.isTensor() && widensToFloat64(input.toTensor().scalar_type())) {
        inputs.replace(i, buffers_.widen(input.toTensor()));
      } else if (input.isTensorList()) {
        inputs.replace(i, widenToFloat64(input));
      }
    }
  }

  void onNode(const Node&, const ModuleCall*, const ValueView&,
              const MutableValueView& outputs) override {
    buffers_.operatorDone(outputs);
  }

  bool seesShapeArithmetic() const override { return false; }

 private:
  WideningBuffers& buffers_;
  const std::atomic<bool>* cancelled_;
};

// A linear whose constant weight has more than kLinearSliceElements elements, rewritten to
// compute its output features a block of rows at a time (each block a view of the weight) and
// concatenate them: widened as read, each block costs a slice's buffer, not the whole weight's
// (Llama-3-8B's vocabulary projection is 4.2 GB in float64). Each output is the same dot
// product over the same inputs either way.
void sliceLargeLinears(torch::jit::Block* block) {
  std::vector<Node*> linears;
  for (Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) sliceLargeLinears(inner);
    if (node->kind() != torch::jit::aten::linear || node->inputs().size() != 3) continue;
    const auto weight = torch::jit::toIValue(node->input(1));
    if (!weight || !weight->isTensor()) continue;
    const at::Tensor& tensor = weight->toTensor();
    if (tensor.dim() != 2 || tensor.numel() <= kLinearSliceElements) continue;
    const auto bias = torch::jit::toIValue(node->input(2));
    if (!bias || !(bias->isNone() || bias->isTensor())) continue;
    linears.push_back(node);
  }
  for (Node* linear : linears) {
    torch::jit::Graph& graph = *linear->owningGraph();
    const torch::jit::WithInsertPoint here(linear);
    const auto scoped = [&](Value* value) {
      value->node()->setScope(linear->scope());
      return value;
    };
    const at::Tensor weight = torch::jit::toIValue(linear->input(1))->toTensor();
    const c10::IValue bias = *torch::jit::toIValue(linear->input(2));
    const int64_t rows = weight.size(0);
    const int64_t step = linearSliceRows(weight.size(1));
    std::vector<Value*> parts;
    for (int64_t start = 0; start < rows; start += step) {
      const int64_t length = std::min(step, rows - start);
      Value* part_weight = scoped(graph.insertConstant(weight.narrow(0, start, length)));
      Value* part_bias =
          scoped(bias.isTensor() ? graph.insertConstant(bias.toTensor().narrow(0, start, length))
                                 : graph.insertConstant(c10::IValue()));
      parts.push_back(scoped(
          graph.insert(torch::jit::aten::linear, {linear->input(0), part_weight, part_bias})));
    }
    Value* list = graph.insertNode(graph.createList(c10::TensorType::get(), parts))->output();
    scoped(list);
    Value* joined = scoped(graph.insert(torch::jit::aten::cat, {list, int64_t{-1}}));
    joined->setType(linear->output()->type());
    linear->output()->replaceAllUsesWith(joined);
    linear->destroy();
  }
}

}  // namespace

c10::IValue widenToFloat64(const c10::IValue& value) {
  if (value.isTensor()) return toFloat64Value(value);
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorVector()) {
      list.push_back(tensor.is_floating_point() ? tensor.to(c10::kDouble) : tensor);
    }
    return list;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const auto& element : value.toTupleRef().elements()) {
      elements.push_back(widenToFloat64(element));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  return value;
}

RegionProgram::RegionProgram(const LoadedModel& model, const std::vector<const Node*>& nodes,
                             const std::vector<const Value*>& inputs,
                             const std::vector<const Value*>& outputs, Precision precision)
    : precision_(precision) {
  graph_ = RegionBuilder(model).build(nodes, inputs, outputs);
  if (precision == Precision::kFloat64) {
    graph_ = toFloat64Graph(*graph_, /*widen_constants=*/false);
    sliceLargeLinears(graph_->block());
  }
  interpreter_ = std::make_unique<Interpreter>(model.module, graph_, model.modules);
}

RegionProgram::~RegionProgram() = default;
RegionProgram::RegionProgram(RegionProgram&&) noexcept = default;

std::vector<c10::IValue> RegionProgram::run(const std::vector<c10::IValue>& inputs,
                                            WideningBuffers* buffers,
                                            const std::atomic<bool>* cancelled) const {
  std::vector<c10::IValue> fed;
  fed.reserve(inputs.size());
  for (const auto& input : inputs) {
    fed.push_back(precision_ == Precision::kFloat64 ? copied(widenToFloat64(input))
                                                    : copied(input));
  }
  if (precision_ == Precision::kFloat32) return interpreter_->run(std::move(fed));
  WideningBuffers own(c10::kDouble);
  WidenAsRead widen(buffers != nullptr ? *buffers : own, cancelled);
  return interpreter_->run(std::move(fed), &widen);
}

std::vector<c10::IValue> drawInputs(const LoadedModel& model, int draw) {
  if (draw == 0) return model.example_inputs;
  const auto& schema = model.module.get_method("forward").function().getSchema();
  return makeExampleInputs(model.card.inputs, schema, model.seed + static_cast<uint64_t>(draw),
                           model.captured_inputs);
}

CapturedDraws captureDraws(const LoadedModel& model, const std::vector<const Value*>& values,
                           int first, int last) {
  CapturedDraws captured;
  captured.draws.resize(static_cast<size_t>(std::max(last, 0)));
  std::vector<std::function<void()>> tasks;
  for (int draw = first; draw < last; ++draw) {
    tasks.emplace_back([&, draw] {
      const auto inputs = drawInputs(model, draw);
      ValueCapture capture(values, /*stop_when_complete=*/true);
      capture.captureInputs(inputs);
      if (!capture.complete()) {
        try {
          model.interpreter->run(inputs, &capture);
        } catch (const ValueCapture::Complete&) {
        }
      }
      captured.draws[static_cast<size_t>(draw)] = capture.values();
    });
  }
  runConcurrently(tasks);
  return captured;
}

ValueCapture::ValueCapture(std::vector<const Value*> wanted, bool stop_when_complete)
    : wanted_(std::move(wanted)), stop_when_complete_(stop_when_complete) {
  for (const Value* value : wanted_) captured_.emplace(value, std::nullopt);
  missing_ = captured_.size();
}

void ValueCapture::captureInputs(const std::vector<c10::IValue>& forward_inputs) {
  for (const Value* value : wanted_) {
    if (value->node()->kind() != prim::Param || value->node()->owningBlock() == nullptr ||
        value->node()->owningBlock()->owningNode() != nullptr) {
      continue;
    }
    const size_t index = value->offset();  // 0 is self
    auto& slot = captured_[value];
    if (index >= 1 && index - 1 < forward_inputs.size() && !slot) {
      slot = copied(forward_inputs[index - 1]);
      --missing_;
    }
  }
}

void ValueCapture::onNode(const Node& node, const ModuleCall*, const ValueView&,
                          const MutableValueView& outputs) {
  for (size_t i = 0; i < node.outputs().size() && i < outputs.size(); ++i) {
    auto slot = captured_.find(node.output(i));
    if (slot != captured_.end() && !slot->second) {
      slot->second = copied(outputs[i]);
      --missing_;
    }
  }
  if (stop_when_complete_ && missing_ == 0) throw Complete{};
}

std::vector<c10::IValue> ValueCapture::values() const {
  std::vector<c10::IValue> values;
  values.reserve(wanted_.size());
  for (const Value* value : wanted_) {
    const auto& captured = captured_.at(value);
    if (!captured) {
      throw UserError("the run never produced %" + value->debugName() + ", an input of the region");
    }
    values.push_back(*captured);
  }
  return values;
}

}  // namespace stickler
