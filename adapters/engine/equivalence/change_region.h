// Where an adaptation changed a model, found by comparing the graph before and the graph after
// node by node (not by trusting what a transform reports): the module calls that hold every
// changed node, and how the region's boundary in one graph corresponds to the other's, so the
// two regions can be run alone on the same captured inputs and their results compared.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

namespace stickler {

struct LoadedModel;
struct NodeRecord;

// For a node of the graph after the edit, the node of the graph before it that it was copied
// from; nullptr for nodes the edit created.
using NodeOrigin = std::function<const torch::jit::Node*(const torch::jit::Node*)>;

struct ChangeRegion {
  enum class Kind {
    kUnchanged,  // node for node the same computation (only placement marks moved, say)
    kRegion,     // the module calls in `modules`
    kWholeModel  // the changes reach the root module, or the region's boundary is not clean
  };
  Kind kind = Kind::kUnchanged;
  std::string why_whole;             // for kWholeModel
  std::vector<std::string> modules;  // the outermost changed module calls, for kRegion

  // Each side's top-level nodes, in graph order, and the values they read from outside
  // (constants and weights aside).
  std::vector<const torch::jit::Node*> before_nodes, after_nodes;
  std::vector<const torch::jit::Value*> before_inputs, after_inputs;
  // What a run of the model after the edit must capture to feed both sides: the values of its
  // graph, and for each side's inputs the index of the captured value that feeds it.
  std::vector<const torch::jit::Value*> captured;
  std::vector<size_t> before_feeds, after_feeds;
  // The same values in the graph before the edit (a model run before it can feed both sides as
  // well), or empty when one of them has no counterpart there.
  std::vector<const torch::jit::Value*> captured_before;
  // The values compared, pairwise: what the rest of the model reads from each side.
  std::vector<const torch::jit::Value*> before_outputs, after_outputs;
  std::vector<std::string> output_names;  // "aten::linear in model.layers.0.self_attn.o_proj"
};

// The region of `before`'s graph that the edit producing `after_graph` changed. A node is
// changed when it is new, computes with another operator or other constants or weights, or
// (given `after_records`, what each node of the adapted model saw on the example inputs) when
// its results have other shapes, dtypes or scalar values than its original's: padding that flows
// through an unchanged operator changes what it computes. A node that reads, in place of a value
// the edit replaced, the replacement is not changed: it is where the region's results are
// compared.
ChangeRegion findChangeRegion(
    const LoadedModel& before, const torch::jit::Graph& after_graph, const NodeOrigin& origin,
    const std::unordered_map<const torch::jit::Node*, NodeRecord>* after_records = nullptr);

// The whole model as a region of itself: every top-level node, the forward's arguments in, the
// forward's results out (named "output 0", ...). `after` may be another model with the same
// forward signature (the original against its adapted form).
ChangeRegion wholeModelRegion(const LoadedModel& before, const LoadedModel& after);

}  // namespace stickler
