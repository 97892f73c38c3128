// Looking at a model and running it: inspect, check, run, profiles.
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeInspectModelOperation();
Operation makeCheckSupportOperation();
Operation makeRunModelOperation();
Operation makeListProfilesOperation();

void addModelOperations(std::vector<Operation>& table) {
  table.push_back(makeInspectModelOperation());
  table.push_back(makeCheckSupportOperation());
  table.push_back(makeRunModelOperation());
  table.push_back(makeListProfilesOperation());
}

}  // namespace stickler
