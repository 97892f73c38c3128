// A graph's structure in one string: every node in execution order, with its operator, its
// module path and how many values it takes and gives. A model host checks that the model it
// made from a recipe is node for node the caller's, so that where a run stopped (a node's
// position) names the same node on both sides.
#pragma once

#include <string>

namespace torch::jit {
struct Graph;
}

namespace stickler {

struct LoadedModel;

std::string graphFingerprint(const torch::jit::Graph& graph);

// What every node of a model saw when it was recorded (loaded_model.h: kinds, shapes, strides,
// dtypes, scalars, executions), node by node in execution order. What a model is lowered from:
// a model host that recorded from shapes alone checks that it would lower the model as its
// caller does, which recorded from values.
std::string recordsFingerprint(const LoadedModel& model);

}  // namespace stickler
