#include "adapters/engine/equivalence/change_region.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "simulator/diagnose/repro_region.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"

namespace stickler {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

namespace {

bool isConstantOrRead(const Node* node) {
  return node->kind() == prim::Constant || node->kind() == prim::GetAttr;
}

bool sameConstant(const Value* a, const Value* b) {
  const auto x = torch::jit::toIValue(a);
  const auto y = torch::jit::toIValue(b);
  if (!x || !y) return false;
  if (x->isTensor() != y->isTensor()) return false;
  if (x->isTensor()) {
    const at::Tensor& s = x->toTensor();
    const at::Tensor& t = y->toTensor();
    return s.scalar_type() == t.scalar_type() && s.sizes().equals(t.sizes()) &&
           (s.unsafeGetTensorImpl() == t.unsafeGetTensorImpl() || at::equal(s, t));
  }
  return x->tagKind() == y->tagKind() && *x == *y;
}

// The top-level node of the graph that holds `node` (itself when it is top-level).
const Node* topLevel(const Node* node) {
  while (node->owningBlock()->owningNode() != nullptr) node = node->owningBlock()->owningNode();
  return node;
}

std::string describeNode(const Node* node) {
  if (node->kind() == prim::Return) return "the forward's result";
  const std::string path = modulePathOf(*node);
  return node->kind().toQualString() + std::string(" in ") +
         (path.empty() ? "the root module" : path);
}

// How a compared value is named in results: by the operator and module that compute it, or,
// for values handed on packed, by the module.
std::string describeProducer(const Value* value) {
  const Node* node = value->node();
  if (node->kind() == prim::TupleConstruct || node->kind() == prim::ListConstruct) {
    const std::string path = modulePathOf(*node);
    return "the results of " + (path.empty() ? std::string("the root module") : path);
  }
  return describeNode(node);
}

// Every node of `top` (top-level nodes) and of their blocks, in graph order.
std::vector<const Node*> inGraphOrder(const std::vector<const Node*>& top) {
  std::vector<const Node*> nodes;
  std::vector<const Node*> pending(top.rbegin(), top.rend());
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    nodes.push_back(node);
    for (auto block = node->blocks().rbegin(); block != node->blocks().rend(); ++block) {
      std::vector<const Node*> inner((*block)->nodes().begin(), (*block)->nodes().end());
      pending.insert(pending.end(), inner.rbegin(), inner.rend());
    }
  }
  return nodes;
}

bool sameRecord(const NodeRecord& a, const NodeRecord& b) {
  if (a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const ValueDesc& x = a.outputs[i];
    const ValueDesc& y = b.outputs[i];
    // Strides are layout, not value: a contiguous copy computes the same numbers.
    if (x.kind != y.kind || x.shape != y.shape || x.dtype != y.dtype || x.value != y.value) {
      return false;
    }
  }
  return true;
}

class RegionFinder {
 public:
  RegionFinder(const LoadedModel& before, const torch::jit::Graph& after, const NodeOrigin& origin,
               const std::unordered_map<const Node*, NodeRecord>* after_records)
      : before_(*before.graph),
        after_(after),
        before_records_(before.records),
        after_records_(after_records) {
    for (const Node* node : allNodes(after_)) {
      const Node* original = origin(node);
      if (original != nullptr) {
        origin_[node] = original;
        survivor_[original] = node;
      }
    }
  }

  ChangeRegion find() {
    ChangeRegion region;
    std::vector<std::string> paths;
    // In graph order, so that whether a producer changed is known before its readers are judged.
    for (const Node* node : allNodes(after_)) {
      if (isConstantOrRead(node) || sameAsOriginal(node)) continue;
      changed_.insert(node);
      paths.push_back(modulePathOf(*node));
    }
    std::unordered_set<const Node*> dead_removed;
    for (const Node* node : allNodes(before_)) {
      if (isConstantOrRead(node) || survivor_.count(node)) continue;
      if (readByASurvivor(node)) {
        paths.push_back(modulePathOf(*node));
      } else {
        dead_removed.insert(node);
      }
    }
    if (paths.empty()) return region;  // removed dead code at most: nothing computes otherwise
    region.modules = outermost(paths);
    if (std::find(region.modules.begin(), region.modules.end(), "") != region.modules.end()) {
      return whole(std::move(region), "the adaptation changes operators of the root module");
    }
    region.kind = ChangeRegion::Kind::kRegion;
    region.before_nodes = nodesIn(before_, region.modules, &dead_removed);
    region.after_nodes = nodesIn(after_, region.modules, nullptr);
    region.before_inputs = readFromOutside(region.before_nodes);
    region.after_inputs = readFromOutside(region.after_nodes);
    std::string problem = planCapture(region);
    if (problem.empty()) problem = pairOutputs(region);
    if (!problem.empty()) return whole(std::move(region), problem);
    return region;
  }

 private:
  ChangeRegion whole(ChangeRegion region, std::string why) {
    region.kind = ChangeRegion::Kind::kWholeModel;
    region.why_whole = std::move(why);
    return region;
  }

  // Whether after value `a` stands where before value `b` stood: the copy of the same value,
  // or a constant equal to it.
  bool corresponds(const Value* a, const Value* b) const {
    const Node* producer = a->node();
    if (producer->kind() == prim::Param) {
      if (b->node()->kind() != prim::Param || a->offset() != b->offset()) return false;
      const Node* owner = producer->owningBlock()->owningNode();
      const Node* original_owner = b->node()->owningBlock()->owningNode();
      if (owner == nullptr) return original_owner == nullptr;
      auto found = origin_.find(owner);
      if (found == origin_.end() || found->second != original_owner) return false;
      // The same block of the owner.
      const auto& blocks = owner->blocks();
      const auto& original_blocks = original_owner->blocks();
      for (size_t i = 0; i < blocks.size() && i < original_blocks.size(); ++i) {
        if (blocks[i] == producer->owningBlock())
          return original_blocks[i] == b->node()->owningBlock();
      }
      return false;
    }
    if (producer->kind() == prim::Constant && b->node()->kind() == prim::Constant) {
      return sameConstant(a, b);
    }
    auto found = origin_.find(producer);
    if (found == origin_.end() || found->second != b->node() || a->offset() != b->offset()) {
      return false;
    }
    if (producer->kind() == prim::GetAttr) {
      return producer->s(torch::jit::attr::name) == b->node()->s(torch::jit::attr::name);
    }
    return true;
  }

  // Whether after value `a` is the replacement of before value `b`: `b` was computed by an
  // operator the edit removed or changed, and `a` by one it added or changed (or `a` is a
  // constant computed in its place, a precomputed table). Weights and constants replaced by
  // others are not replacements: the reader then computes with other numbers.
  bool replaces(const Value* a, const Value* b) const {
    const Node* old_producer = b->node();
    if (isConstantOrRead(old_producer) || old_producer->kind() == prim::Param) return false;
    auto survivor = survivor_.find(old_producer);
    if (survivor != survivor_.end() && !changed_.count(survivor->second)) return false;
    const Node* new_producer = a->node();
    if (new_producer->kind() == prim::Constant) return true;
    if (new_producer->kind() == prim::GetAttr || new_producer->kind() == prim::Param) return false;
    return !origin_.count(new_producer) || changed_.count(new_producer);
  }

  // The node computes what its original did from what its original read (or from what
  // replaced it).
  bool sameAsOriginal(const Node* node) const {
    auto found = origin_.find(node);
    if (found == origin_.end()) return false;
    const Node* original = found->second;
    if (node->kind() != original->kind() || node->inputs().size() != original->inputs().size() ||
        node->outputs().size() != original->outputs().size() ||
        node->blocks().size() != original->blocks().size()) {
      return false;
    }
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      if (!corresponds(node->input(i), original->input(i)) &&
          !replaces(node->input(i), original->input(i))) {
        return false;
      }
    }
    for (size_t b = 0; b < node->blocks().size(); ++b) {
      const Block* block = node->blocks()[b];
      const Block* original_block = original->blocks()[b];
      if (block->outputs().size() != original_block->outputs().size()) return false;
      for (size_t i = 0; i < block->outputs().size(); ++i) {
        if (!corresponds(block->outputs()[i], original_block->outputs()[i]) &&
            !replaces(block->outputs()[i], original_block->outputs()[i])) {
          return false;
        }
      }
    }
    if (after_records_ != nullptr) {
      auto seen = after_records_->find(node);
      auto original_seen = before_records_.find(original);
      if ((seen == after_records_->end()) != (original_seen == before_records_.end())) return false;
      if (seen != after_records_->end() && !sameRecord(seen->second, original_seen->second)) {
        return false;
      }
    }
    return true;
  }

  // Whether a node the edit removed fed something that is still there: the node was replaced,
  // not merely left without readers.
  bool readByASurvivor(const Node* node) const {
    for (const Value* output : node->outputs()) {
      for (const auto& use : output->uses()) {
        const Node* user = use.user;
        if (user->kind() == prim::Return) {
          const Node* owner = user->owningBlock()->owningNode();
          if (owner == nullptr || survivor_.count(owner)) return true;
        } else if (survivor_.count(user)) {
          return true;
        }
      }
    }
    return false;
  }

  static bool within(const std::string& path, const std::vector<std::string>& modules) {
    for (const auto& module : modules) {
      if (isWithin(path, module)) return true;
    }
    return false;
  }

  // The paths that have no ancestor among them, sorted.
  static std::vector<std::string> outermost(std::vector<std::string> paths) {
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
    std::vector<std::string> kept;
    for (const auto& path : paths) {
      bool inside_another = false;
      for (const auto& other : paths) {
        if (other != path && isWithin(path, other)) inside_another = true;
      }
      if (!inside_another) kept.push_back(path);
    }
    return kept;
  }

  // Top-level nodes of `graph` that are or hold a node within `modules` (or in `extra`).
  static std::vector<const Node*> nodesIn(const torch::jit::Graph& graph,
                                          const std::vector<std::string>& modules,
                                          const std::unordered_set<const Node*>* extra) {
    std::vector<const Node*> nodes;
    for (const Node* node : graph.nodes()) {
      if (isConstantOrRead(node)) continue;
      bool inside = false;
      for (const Node* nested : nodesWithin({{node}, "", ""})) {
        inside = inside || within(modulePathOf(*nested), modules) ||
                 (extra != nullptr && extra->count(nested));
      }
      if (inside) nodes.push_back(node);
    }
    return nodes;
  }

  // The values `nodes` read from outside: not constants or weights, and not `self`, which the
  // region's own graph has.
  static std::vector<const Value*> readFromOutside(const std::vector<const Node*>& nodes) {
    const Region region{nodes, "", ""};
    std::vector<const Value*> inputs;
    for (const Value* value : boundaryInputs(region, nodesWithin(region))) {
      const bool self = value->node() == value->owningGraph()->param_node() && value->offset() == 0;
      if (!isConstantOrRead(value->node()) && !self) inputs.push_back(value);
    }
    return inputs;
  }

  // The after graph's value that a before value outside the region corresponds to.
  const Value* afterValueOf(const Value* before_value) const {
    const Node* producer = before_value->node();
    if (producer == before_.param_node()) return after_.inputs().at(before_value->offset());
    auto survivor = survivor_.find(producer);
    if (survivor == survivor_.end() || topLevel(survivor->second) != survivor->second) {
      return nullptr;
    }
    return survivor->second->output(before_value->offset());
  }

  // The before graph's value that an after value outside the region was copied from.
  const Value* beforeValueOf(const Value* after_value) const {
    const Node* producer = after_value->node();
    if (producer == after_.param_node()) return before_.inputs().at(after_value->offset());
    auto found = origin_.find(producer);
    if (found == origin_.end() || topLevel(found->second) != found->second) return nullptr;
    return found->second->output(after_value->offset());
  }

  std::string planCapture(ChangeRegion& region) const {
    std::unordered_map<const Value*, size_t> slots;
    auto slotOf = [&](const Value* value, const Value* before_value) {
      auto [it, inserted] = slots.try_emplace(value, region.captured.size());
      if (inserted) {
        region.captured.push_back(value);
        region.captured_before.push_back(before_value);
      }
      return it->second;
    };
    for (const Value* input : region.after_inputs) {
      if (topLevel(input->node()) != input->node() && input->node()->kind() != prim::Param) {
        return "the region reads a value computed inside a loop or branch";
      }
      region.after_feeds.push_back(slotOf(input, beforeValueOf(input)));
    }
    for (const Value* input : region.before_inputs) {
      const Value* after_value = afterValueOf(input);
      if (after_value == nullptr) {
        return "the region reads " + describeProducer(input) + ", which the adapted model lacks";
      }
      region.before_feeds.push_back(slotOf(after_value, input));
    }
    if (std::find(region.captured_before.begin(), region.captured_before.end(), nullptr) !=
        region.captured_before.end()) {
      region.captured_before.clear();
    }
    return "";
  }

  std::string pairOutputs(ChangeRegion& region) const {
    const Region before_region{region.before_nodes, "", ""};
    const auto before_within = nodesWithin(before_region);
    const Region after_region{region.after_nodes, "", ""};
    const auto after_within = nodesWithin(after_region);
    std::map<std::pair<const Value*, const Value*>, bool> seen;
    for (const Node* node : inGraphOrder(region.before_nodes)) {
      for (const Value* output : node->outputs()) {
        for (const auto& use : output->uses()) {
          if (before_within.count(use.user)) continue;
          const Value* after_value = nullptr;
          if (use.user == before_.return_node()) {
            after_value = after_.outputs().at(use.offset);
          } else if (use.user->kind() == prim::Return) {
            // A block's result: inside the region when the block's owner is.
            const Node* owner = use.user->owningBlock()->owningNode();
            if (before_within.count(owner)) continue;
            auto survivor = survivor_.find(owner);
            if (survivor == survivor_.end()) {
              return "what the region computes is read by " + describeNode(owner) +
                     ", which the adapted model lacks";
            }
            size_t block = 0;
            while (block < owner->blocks().size() &&
                   owner->blocks()[block] != use.user->owningBlock()) {
              ++block;
            }
            after_value = survivor->second->blocks().at(block)->outputs().at(use.offset);
          } else {
            auto survivor = survivor_.find(use.user);
            if (survivor == survivor_.end()) {
              return "what the region computes is read by " + describeNode(use.user) +
                     ", which the adapted model lacks";
            }
            after_value = survivor->second->input(use.offset);
          }
          const Node* producer = after_value->node();
          if (producer->kind() != prim::Constant && !after_within.count(producer)) {
            return "the adapted model reads " + describeProducer(output) +
                   " from outside the changed modules";
          }
          if (!seen.emplace(std::make_pair(output, after_value), true).second) continue;
          region.before_outputs.push_back(output);
          region.after_outputs.push_back(after_value);
          region.output_names.push_back(describeProducer(output));
        }
      }
    }
    if (region.before_outputs.empty()) return "nothing outside the changed modules reads them";
    return "";
  }

  const torch::jit::Graph& before_;
  const torch::jit::Graph& after_;
  const std::unordered_map<const Node*, NodeRecord>& before_records_;
  const std::unordered_map<const Node*, NodeRecord>* after_records_;
  std::unordered_map<const Node*, const Node*> origin_;    // after -> before
  std::unordered_map<const Node*, const Node*> survivor_;  // before -> after
  std::unordered_set<const Node*> changed_;                // after nodes judged changed
};

}  // namespace

ChangeRegion findChangeRegion(const LoadedModel& before, const torch::jit::Graph& after_graph,
                              const NodeOrigin& origin,
                              const std::unordered_map<const Node*, NodeRecord>* after_records) {
  return RegionFinder(before, after_graph, origin, after_records).find();
}

ChangeRegion wholeModelRegion(const LoadedModel& before, const LoadedModel& after) {
  ChangeRegion region;
  region.kind = ChangeRegion::Kind::kWholeModel;
  for (const Node* node : before.graph->nodes()) {
    if (!isConstantOrRead(node)) region.before_nodes.push_back(node);
  }
  for (const Node* node : after.graph->nodes()) {
    if (!isConstantOrRead(node)) region.after_nodes.push_back(node);
  }
  const size_t inputs = std::min(before.graph->inputs().size(), after.graph->inputs().size());
  for (size_t i = 1; i < inputs; ++i) {
    region.before_inputs.push_back(before.graph->inputs()[i]);
    region.after_inputs.push_back(after.graph->inputs()[i]);
    region.captured.push_back(after.graph->inputs()[i]);
    region.captured_before.push_back(before.graph->inputs()[i]);
    region.before_feeds.push_back(i - 1);
    region.after_feeds.push_back(i - 1);
  }
  const size_t outputs = std::min(before.graph->outputs().size(), after.graph->outputs().size());
  for (size_t i = 0; i < outputs; ++i) {
    region.before_outputs.push_back(before.graph->outputs()[i]);
    region.after_outputs.push_back(after.graph->outputs()[i]);
    region.output_names.push_back("output " + std::to_string(i));
  }
  return region;
}

}  // namespace stickler
