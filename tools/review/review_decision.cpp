// A reviewer's decisions on a proposal: request changes, reject. Command line only (and, later,
// the review page): an agent must not decide on its own proposal, so no MCP tool is made of
// them. Approval comes with the gate that re-runs the claims (issue 16).
#include "simulator/support/git_support.h"
#include "simulator/support/text_format.h"
#include "tools/framework/operation_table.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

using nlohmann::json;

Operation decisionOperation(const std::string& name, const std::string& command,
                            ProposalState decision, const std::string& description) {
  Operation operation;
  operation.name = name;
  operation.title = description;
  operation.description = description +
                          " (a reviewer's decision: the command line only, never an MCP tool). The "
                          "comment says why; it reaches the agent through review_status. With "
                          "revision, the decision is refused if the proposal changed since that "
                          "revision (another reviewer acted).";
  json schema = {
      {"type", "object"}, {"required", {"id", "comment"}}, {"additionalProperties", false}};
  schema["properties"]["id"] = {
      {"type", "integer"}, {"minimum", 1}, {"description", "The proposal's id."}};
  schema["properties"]["comment"] = {
      {"type", "string"}, {"minLength", 1}, {"description", "Why, for the agent and the record."}};
  schema["properties"]["revision"] = {
      {"type", "integer"},
      {"minimum", 1},
      {"description", "The revision you read (review show); the current one when absent."}};
  operation.input_schema = schema;
  operation.output_schema = proposalOutputSchema();
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = false};
  operation.over_mcp = false;
  operation.cli = {command, {"id"}, {}};
  operation.run = [decision](const json& input, OperationContext& context) {
    ProposalStore store = openReviewStore(context);
    const int64_t id = input.at("id").get<int64_t>();
    const int64_t revision =
        input.contains("revision") ? input["revision"].get<int64_t>() : store.get(id).version;
    return proposalDocument(store.decide(id, revision, decision, git::authorIdentity(),
                                         input.at("comment").get<std::string>(), isoTimeUtcNow()));
  };
  operation.render_text = [](const json& output) {
    return "proposal " + std::to_string(output["id"].get<int64_t>()) + ": " +
           output["state"].get<std::string>() + "\n";
  };
  return operation;
}

}  // namespace

Operation makeRequestChangesOperation() {
  return decisionOperation("review_request_changes", "review request-changes",
                           ProposalState::kChangesRequested, "Request changes to a proposal");
}

Operation makeRejectProposalOperation() {
  return decisionOperation("review_reject", "review reject", ProposalState::kRejected,
                           "Reject a proposal");
}

}  // namespace stickler
