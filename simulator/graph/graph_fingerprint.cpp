#include "simulator/graph/graph_fingerprint.h"

#include <torch/script.h>

#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"
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

namespace {

void appendDesc(std::string& text, const ValueDesc& desc) {
  text += desc.kind + ' ' + desc.dtype + ' ' + desc.value + " [";
  for (const int64_t size : desc.shape) text += std::to_string(size) + ',';
  text += "] [";
  for (const int64_t stride : desc.strides) text += std::to_string(stride) + ',';
  text += "] ";
}

}  // namespace

std::string recordsFingerprint(const LoadedModel& model) {
  std::string text;
  for (const torch::jit::Node* node : allNodes(*model.graph)) {
    const auto record = model.records.find(node);
    if (record == model.records.end()) {
      text += "-\n";
      continue;
    }
    text += std::to_string(record->second.executions) + " in ";
    for (const ValueDesc& input : record->second.inputs) appendDesc(text, input);
    text += "out ";
    for (const ValueDesc& output : record->second.outputs) appendDesc(text, output);
    text += '\n';
  }
  return sha256Bytes(text);
}

}  // namespace stickler
