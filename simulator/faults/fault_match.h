// The part of a fault rule's match that reads the node's names only: its operator and its module
// path. Lowering adds shapes and fusion (simulator/lowering/fault_binding.cpp); a reproducer asks
// whether a rule could strike an operator taken out of its modules (repro_bundle.cpp).
#pragma once

#include <string>

namespace stickler {

struct FaultRule;

// Whether the rule names the operator `op` (a rule without one names every operator).
bool faultRuleNamesOp(const FaultRule& rule, const std::string& op);

// Whether the rule's module glob matches `module_path` ("" for a node at no module; a rule
// without a glob matches every path).
bool faultRuleNamesPath(const FaultRule& rule, const std::string& module_path);

}  // namespace stickler
