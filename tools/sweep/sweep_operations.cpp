// Coverage sweeps: sweep, sweep merge, sweep report.
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeRunSweepOperation();
Operation makeMergeSweepsOperation();
Operation makeCoverageReportOperation();

void addSweepOperations(std::vector<Operation>& table) {
  table.push_back(makeRunSweepOperation());
  table.push_back(makeMergeSweepsOperation());
  table.push_back(makeCoverageReportOperation());
}

}  // namespace stickler
