// The knowledge base and gotchas: kb search, kb read, gotchas record, list, show.
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeKbSearchOperation();
Operation makeKbReadOperation();
Operation makeRecordGotchaOperation();
Operation makeListGotchasOperation();
Operation makeShowGotchaOperation();

void addKnowledgeOperations(std::vector<Operation>& table) {
  table.push_back(makeKbSearchOperation());
  table.push_back(makeKbReadOperation());
  table.push_back(makeRecordGotchaOperation());
  table.push_back(makeListGotchasOperation());
  table.push_back(makeShowGotchaOperation());
}

}  // namespace stickler
