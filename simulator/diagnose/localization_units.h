// The units of causal localization: the modules whose own operators run on the device (children
// not included), in the order their first operator executes. A module that only passes its input
// through (dropout in inference) is no unit of its own: it rides with the unit before it, so that
// a kernel fused across it (an add, the dropout, a layer_norm) is placed whole in a hybrid run,
// and it is never named as a cause it cannot be.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace stickler {

struct LoweringResult;

class LocalizationUnits {
 public:
  LocalizationUnits() = default;
  LocalizationUnits(const torch::jit::Graph& graph, const LoweringResult& lowering);

  // Module paths, in execution order.
  const std::vector<std::string>& paths() const { return paths_; }
  size_t size() const { return paths_.size(); }

  // What a hybrid run puts on the device for these units: each, and the modules riding with it.
  std::vector<std::string> placed(const std::vector<std::string>& units) const;

  // A unit's device operators, its riders' included, counted by kind.
  std::map<std::string, int64_t> opsOf(const std::string& unit) const;
  // Those of them the device stack runs on its host CPU (a CPU fallback), counted by kind.
  std::map<std::string, int64_t> cpuFallbackOpsOf(const std::string& unit) const;

  // The positions (in allNodes order) of a unit's own device operators, its riders' not
  // included: the units of operator-level localization.
  const std::vector<int64_t>& nodesOf(const std::string& unit) const { return nodes_.at(unit); }
  // The node at `position` in allNodes order (the graph's, whether on the device or not).
  const torch::jit::Node* nodeAt(int64_t position) const {
    return nodes_in_order_.at(static_cast<size_t>(position));
  }
  // Whether the operator at `position` is one the device stack runs on its host CPU.
  bool isCpuFallback(int64_t position) const { return fallback_nodes_.count(position) > 0; }
  // The pass-through modules riding with a unit.
  std::vector<std::string> ridersOf(const std::string& unit) const;

 private:
  std::map<std::string, int64_t> countedWithRiders(
      const std::map<std::string, std::map<std::string, int64_t>>& counts,
      const std::string& unit) const;

  std::vector<std::string> paths_;
  std::vector<const torch::jit::Node*> nodes_in_order_;        // allNodes order
  std::map<std::string, std::map<std::string, int64_t>> ops_;  // each module's own
  std::map<std::string, std::map<std::string, int64_t>> fallback_ops_;
  std::map<std::string, std::vector<int64_t>> nodes_;
  std::set<int64_t> fallback_nodes_;
  std::map<std::string, std::vector<std::string>> riders_;
};

}  // namespace stickler
