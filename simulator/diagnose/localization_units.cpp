#include "simulator/diagnose/localization_units.h"

#include <torch/script.h>

#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/lowering.h"

namespace stickler {
namespace {

// aten::dropout and its kin with train=false: the identity.
bool passesThrough(const torch::jit::Node& node) {
  const std::string kind = node.kind().toQualString();
  if (kind != "aten::dropout" && kind != "aten::dropout_" && kind != "aten::feature_dropout" &&
      kind != "aten::alpha_dropout") {
    return false;
  }
  const auto train = torch::jit::toIValue(node.input(2));
  return train && train->isBool() && !train->toBool();
}

}  // namespace

LocalizationUnits::LocalizationUnits(const torch::jit::Graph& graph,
                                     const LoweringResult& lowering) {
  std::vector<std::string> modules;
  std::map<std::string, bool> passive;
  nodes_in_order_ = allNodes(graph);
  int64_t position = -1;
  for (const torch::jit::Node* node : nodes_in_order_) {
    ++position;
    const NodePlace place = lowering.placeOf(node);
    if (place != NodePlace::kDevice && place != NodePlace::kFallback) continue;
    const std::string path = modulePathOf(*node);
    if (!ops_.count(path)) modules.push_back(path);
    ++ops_[path][node->kind().toQualString()];
    if (place == NodePlace::kFallback) {
      ++fallback_ops_[path][node->kind().toQualString()];
      fallback_nodes_.insert(position);
    }
    nodes_[path].push_back(position);
    const auto known = passive.find(path);
    passive[path] = passesThrough(*node) && (known == passive.end() || known->second);
  }
  for (const std::string& path : modules) {
    if (passive[path] && !paths_.empty()) {
      riders_[paths_.back()].push_back(path);
    } else {
      paths_.push_back(path);
    }
  }
  // A leading pass-through module, with those riding with it, rides with the next unit.
  if (paths_.size() > 1 && passive[paths_.front()]) {
    const std::string first = paths_.front();
    std::vector<std::string> moved{first};
    moved.insert(moved.end(), riders_[first].begin(), riders_[first].end());
    riders_.erase(first);
    std::vector<std::string>& riders = riders_[paths_[1]];
    riders.insert(riders.begin(), moved.begin(), moved.end());
    paths_.erase(paths_.begin());
  }
}

std::vector<std::string> LocalizationUnits::placed(const std::vector<std::string>& units) const {
  std::vector<std::string> modules;
  for (const std::string& unit : units) {
    modules.push_back(unit);
    if (const auto riders = riders_.find(unit); riders != riders_.end()) {
      modules.insert(modules.end(), riders->second.begin(), riders->second.end());
    }
  }
  return modules;
}

std::map<std::string, int64_t> LocalizationUnits::countedWithRiders(
    const std::map<std::string, std::map<std::string, int64_t>>& counts,
    const std::string& unit) const {
  std::map<std::string, int64_t> total;
  for (const std::string& module : placed({unit})) {
    if (const auto own = counts.find(module); own != counts.end()) {
      for (const auto& [op, count] : own->second) total[op] += count;
    }
  }
  return total;
}

std::map<std::string, int64_t> LocalizationUnits::opsOf(const std::string& unit) const {
  return countedWithRiders(ops_, unit);
}

std::map<std::string, int64_t> LocalizationUnits::cpuFallbackOpsOf(const std::string& unit) const {
  return countedWithRiders(fallback_ops_, unit);
}

std::vector<std::string> LocalizationUnits::ridersOf(const std::string& unit) const {
  const auto riders = riders_.find(unit);
  return riders == riders_.end() ? std::vector<std::string>{} : riders->second;
}

}  // namespace stickler
