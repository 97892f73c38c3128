// Adapters: the catalog (adapters, adapters history, adapters stale, init, draft), one at a time
// (match, apply, revert, applied) and all at once (adapt).
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeListAdaptersOperation();
Operation makeMatchAdaptersOperation();
Operation makeApplyAdapterOperation();
Operation makeRevertAdapterOperation();
Operation makeShowAppliedOperation();
Operation makeDraftAdapterOperation();
Operation makeCatalogHistoryOperation();
Operation makeAdaptModelOperation();
Operation makeInitWorkspaceOperation();
Operation makeStaleAdaptersOperation();

void addAdapterOperations(std::vector<Operation>& table) {
  table.push_back(makeListAdaptersOperation());
  table.push_back(makeMatchAdaptersOperation());
  table.push_back(makeApplyAdapterOperation());
  table.push_back(makeRevertAdapterOperation());
  table.push_back(makeShowAppliedOperation());
  table.push_back(makeDraftAdapterOperation());
  table.push_back(makeCatalogHistoryOperation());
  table.push_back(makeAdaptModelOperation());
  table.push_back(makeInitWorkspaceOperation());
  table.push_back(makeStaleAdaptersOperation());
}

}  // namespace stickler
