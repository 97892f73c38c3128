// Saved reports: report, report prune.
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeGetReportOperation();
Operation makePruneReportsOperation();

void addReportOperations(std::vector<Operation>& table) {
  table.push_back(makeGetReportOperation());
  table.push_back(makePruneReportsOperation());
}

}  // namespace stickler
