#include "adapters/engine/graph_change.h"

#include <map>

namespace stickler {
namespace {

nlohmann::json countedNodes(const std::vector<ChangedNode>& nodes, size_t limit) {
  // Keyed by module then op, so that the list reads in module order.
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const ChangedNode& node : nodes) ++counts[{node.module, node.op}];
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [key, count] : counts) {
    if (limit != 0 && list.size() == limit) break;
    list.push_back({{"op", key.second}, {"module", key.first}, {"count", count}});
  }
  return list;
}

}  // namespace

nlohmann::json graphChangeToJson(const GraphChange& change, size_t limit) {
  return {{"rewrites", change.rewrites},
          {"nodes_removed", change.removed.size()},
          {"nodes_added", change.added.size()},
          {"removed", countedNodes(change.removed, limit)},
          {"added", countedNodes(change.added, limit)},
          {"placed_on_host", change.placed_on_host},
          {"nodes_on_host", countedNodes(change.nodes_on_host, limit)}};
}

}  // namespace stickler
