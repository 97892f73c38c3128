// The review queue: submit, show, list, request changes, reject, approve, baseline.
#include "tools/framework/operation_table.h"

namespace stickler {

Operation makeSubmitForReviewOperation();
Operation makeReviewStatusOperation();
Operation makeListReviewsOperation();
Operation makeRequestChangesOperation();
Operation makeRejectProposalOperation();
Operation makeApproveProposalOperation();
Operation makeReviewBaselineOperation();

void addReviewOperations(std::vector<Operation>& table) {
  table.push_back(makeSubmitForReviewOperation());
  table.push_back(makeReviewStatusOperation());
  table.push_back(makeListReviewsOperation());
  table.push_back(makeRequestChangesOperation());
  table.push_back(makeRejectProposalOperation());
  table.push_back(makeApproveProposalOperation());
  table.push_back(makeReviewBaselineOperation());
}

}  // namespace stickler
