#include "tests/unit/adapter_test_support.h"

#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"

namespace stickler::testing {

AdapterFile rewriteFor(const std::string& name, const std::string& functions) {
  return parseAdapterFile("name = \"" + name +
                              "\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
                              "profiles = [\"spyre-2026\"]\nremove_when = \"r\"\n\n\n" +
                              functions,
                          name + ".py");
}

int countOps(const LoadedModel& model, const std::string& op) {
  int count = 0;
  for (const auto* node : allNodes(*model.graph)) count += node->kind().toQualString() == op;
  return count;
}

}  // namespace stickler::testing
