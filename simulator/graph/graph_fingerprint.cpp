#include "simulator/graph/graph_fingerprint.h"

#include <torch/script.h>

#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/sha256.h"

namespace stickler {

std::string graphFingerprint(const torch::jit::Graph& graph) {
  std::string text;
  for (const torch::jit::Node* node : allNodes(graph)) {
    text += node->kind().toQualString();
    text += ' ';
    text += modulePathOf(*node);
    text += ' ' + std::to_string(node->inputs().size()) + ' ' +
            std::to_string(node->outputs().size()) + '\n';
  }
  return sha256Bytes(text);
}

}  // namespace stickler
