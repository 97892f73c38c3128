// Diagnosing a model on the device: diagnose, blockers, localize.
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeDiagnoseModelOperation();
Operation makeRankBlockersOperation();
Operation makeLocalizeDivergenceOperation();

void addDiagnoseOperations(std::vector<Operation>& table) {
  table.push_back(makeDiagnoseModelOperation());
  table.push_back(makeRankBlockersOperation());
  table.push_back(makeLocalizeDivergenceOperation());
}

}  // namespace stickler
