#include "adapters/engine/no_match_explanation.h"

#include <algorithm>
#include <regex>
#include <sstream>
#include <unordered_map>

#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;

std::string where(const Node& node) {
  const std::string module = modulePathOf(node);
  return std::string(node.kind().toQualString()) + " in " +
         (module.empty() ? "the forward's own operators" : module);
}

std::string valueText(const c10::IValue& value) {
  std::ostringstream text;
  if (value.isDouble()) {
    text << value.toDouble();
    if (text.str().find_first_of(".e") == std::string::npos) text << ".0";  // 2.0 is not 2
    return text.str();
  }
  text << value;
  return text.str();
}

bool isOperator(const Node& node) {
  return node.kind() != prim::Constant && node.kind() != prim::Param && node.kind() != prim::Return;
}

bool inControlFlow(const Node& node) {
  for (const torch::jit::Block* block = node.owningBlock(); block->owningNode() != nullptr;
       block = block->owningNode()->owningBlock()) {
    const auto kind = block->owningNode()->kind();
    if (kind == prim::If || kind == prim::Loop) return true;
  }
  return false;
}

// One attempt at one anchor: the pattern matched backwards from its result, as LibTorch's
// subgraph matcher does, stopping at the first difference and saying what it was.
class Attempt {
 public:
  bool matchNode(const Node* p, const Node* g) {
    if (p->kind() != g->kind()) {
      diverged_ = "the pattern has " + std::string(p->kind().toQualString()) +
                  " where the graph has " + where(*g);
      return false;
    }
    if (p->inputs().size() != g->inputs().size() || p->outputs().size() != g->outputs().size()) {
      diverged_ = where(*g) + " takes " + std::to_string(g->inputs().size()) +
                  " inputs; the pattern's takes " + std::to_string(p->inputs().size()) +
                  " (another overload: write the arguments as the graph has them)";
      return false;
    }
    ++matched_;
    pairs_.emplace_back(p, g);
    for (size_t i = 0; i < p->inputs().size(); ++i) {
      if (!matchInput(p->input(i), g->input(i), *g, i)) return false;
    }
    return true;
  }

  // After the whole pattern matched: what it does not return may not be read elsewhere.
  bool noUseOutside() {
    for (const auto& [p, g] : pairs_) {
      const auto returned = p->owningGraph()->outputs();
      for (size_t i = 0; i < g->outputs().size(); ++i) {
        if (std::find(returned.begin(), returned.end(), p->outputs()[i]) != returned.end())
          continue;
        if (g->outputs()[i]->uses().size() <= p->outputs()[i]->uses().size()) continue;
        for (const auto& use : g->outputs()[i]->uses()) {
          const bool inside = std::any_of(pairs_.begin(), pairs_.end(), [&](const auto& pair) {
            return pair.second == use.user;
          });
          if (!inside && g->outputs().size() > 1 && p->outputs()[i]->uses().empty()) {
            diverged_ = "result " + std::to_string(i) + " of " + where(*g) + " is read by " +
                        where(*use.user) +
                        " and the pattern does not return it (return every result the model "
                        "reads: `values, indices = torch.topk(...)` then `return values, indices`)";
            return false;
          }
          if (!inside) {
            diverged_ = "the result of " + where(*g) + " is also read outside the match, by " +
                        where(*use.user) + " (a match may be read only through what it returns)";
            return false;
          }
        }
      }
    }
    return true;
  }

  int matched() const { return matched_; }
  const std::string& diverged() const { return diverged_; }

 private:
  bool matchInput(const Value* pv, const Value* gv, const Node& g, size_t index) {
    const Node* producer = pv->node();
    const std::string input = "input " + std::to_string(index) + " of " + where(g);
    if (producer->kind() == prim::Param) {  // a pattern parameter: any value, the same each time
      auto [bound, fresh] = bound_.try_emplace(pv, gv);
      if (!fresh && bound->second != gv) {
        diverged_ = input + " is another value than the one the pattern's parameter `" +
                    pv->debugName() + "` already stands for";
        return false;
      }
      return true;
    }
    if (producer->kind() == prim::Constant) {
      const auto wanted = torch::jit::toIValue(pv);
      const auto found = torch::jit::toIValue(gv);
      if (!found) {
        diverged_ = input + ": the pattern has the constant " + valueText(*wanted) +
                    ", the graph computes it (" + gv->node()->kind().toQualString() +
                    "): make it a parameter of the pattern";
        return false;
      }
      const bool same = wanted->isTensor() || found->isTensor()
                            ? false
                            : wanted->tagKind() == found->tagKind() && *wanted == *found;
      if (!same) {
        diverged_ = input + ": the pattern has the constant " + valueText(*wanted) + " (" +
                    wanted->tagKind() + "), the graph has " + valueText(*found) + " (" +
                    found->tagKind() + ")";
        return false;
      }
      return true;
    }
    if (pv->offset() != gv->offset()) {
      diverged_ = input + " is another output of its producer than the pattern's";
      return false;
    }
    return matchNode(producer, gv->node());
  }

  int matched_ = 0;
  std::string diverged_;
  std::unordered_map<const Value*, const Value*> bound_;
  std::vector<std::pair<const Node*, const Node*>> pairs_;
};

}  // namespace

std::vector<PartialMatch> closestPartialMatches(const torch::jit::Graph& pattern,
                                                const torch::jit::Graph& graph) {
  const Node* anchor = pattern.outputs().at(0)->node();
  int operators = 0;
  for (const Node* node : pattern.nodes()) operators += isOperator(*node);
  std::vector<PartialMatch> found;
  for (const Node* node : allNodes(graph)) {
    if (node->kind() != anchor->kind()) continue;
    Attempt attempt;
    PartialMatch match;
    match.anchor = where(*node);
    match.operators = operators;
    match.in_control_flow = inControlFlow(*node);
    if (attempt.matchNode(anchor, node) && attempt.noUseOutside()) {
      match.diverged = "the whole pattern matches here";
    } else {
      match.diverged = attempt.diverged();
    }
    match.matched = attempt.matched();
    found.push_back(std::move(match));
  }
  if (found.empty()) {
    PartialMatch none;
    none.operators = operators;
    none.diverged = std::string("the model has no ") + anchor->kind().toQualString() +
                    ", the operator the pattern ends in";
    return {none};
  }
  // The most operators matched first; among equals, the graph's order (stable).
  std::stable_sort(found.begin(), found.end(), [](const PartialMatch& a, const PartialMatch& b) {
    return a.matched > b.matched;
  });
  // One per distinct divergence: forty layers that diverge the same way are one explanation.
  std::vector<PartialMatch> shown;
  for (PartialMatch& match : found) {
    // The module paths differ per layer; the reason without them is what matters.
    static const std::regex kModulePath(" in [^ :,()]+");
    const auto reasonOf = [](const PartialMatch& partial) {
      return std::regex_replace(partial.diverged, kModulePath, " in _");
    };
    const bool seen = std::any_of(shown.begin(), shown.end(), [&](const PartialMatch& other) {
      return other.matched == match.matched && reasonOf(other) == reasonOf(match);
    });
    if (seen) continue;
    shown.push_back(std::move(match));
    if (shown.size() == kPartialMatchesShown) break;
  }
  return shown;
}

std::string partialMatchText(const PartialMatch& match) {
  if (match.anchor.empty()) return match.diverged;
  return "at " + match.anchor +
         (match.in_control_flow ? " (inside a prim::If/prim::Loop block)" : "") + ": " +
         std::to_string(match.matched) + " of " + std::to_string(match.operators) +
         " pattern operators matched, then " + match.diverged;
}

}  // namespace stickler
