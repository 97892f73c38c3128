// review approve: the gate, then the merge into the catalog's main
// (tools/review/review_approval.h). Command line only (and the review page): an agent must not
// approve its own proposal.
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/review/review_approval.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  GateOptions options;
  options.model_seconds = input.at("model_timeout_seconds").get<double>();
  options.decode_steps = input.at("decode").get<int64_t>();
  options.regression_sample = input.at("regression_sample").get<size_t>();
  const std::optional<int64_t> revision =
      input.contains("revision") ? std::optional<int64_t>(input["revision"].get<int64_t>())
                                 : std::nullopt;
  const ApprovalOutcome outcome = approveProposal(context, input.at("id").get<int64_t>(), revision,
                                                  input.value("comment", ""), options);
  json document = proposalDocument(outcome.proposal);
  document["approved"] = outcome.approved;
  document["commit_on_main"] = outcome.approved ? json(outcome.commit) : json();
  document["gate"] = outcome.gate.report;
  document["gate"]["reused"] = outcome.gate.reused;
  return document;
}

std::string render(const json& output) {
  const std::string id = std::to_string(output["id"].get<int64_t>());
  std::string text;
  if (output["approved"].get<bool>()) {
    text = "proposal " + id + ": approved; main is now " +
           output["commit_on_main"].get<std::string>().substr(0, 12) + "\n";
  } else {
    text = "proposal " + id + ": NOT approved, the gate failed:\n";
    for (const json& problem : output["gate"]["problems"]) {
      text += "  - " + problem.get<std::string>() + "\n";
    }
  }
  for (const json& model : output["gate"]["models"]) {
    text += "  " + model["role"].get<std::string>() + " " + model["model"].get<std::string>() +
            " on " + model["profile"].get<std::string>() + ": " + gateVerdictText(model) + "\n";
  }
  if (output["gate"].value("reused", false)) {
    text += "(the gate's result from " + output["gate"]["time"].get<std::string>() +
            ", on the same proposal, catalog and models, was reused)\n";
  }
  return text;
}

}  // namespace

Operation makeApproveProposalOperation() {
  Operation operation;
  operation.name = "review_approve";
  operation.title = "Approve a proposal";
  operation.description =
      "Approve a proposal (a reviewer's decision: the command line and the review page only, "
      "never an MCP tool). First the gate runs, each model in a worker process with a timeout: "
      "every claimed model end to end with the catalog's main plus the proposal, the adapters' "
      "equivalence on input draws the agent never used, and the models the catalog already "
      "passed (a seeded sample beyond regression_sample). When all pass, the proposal is merged "
      "into main with you (GIT_AUTHOR_NAME/EMAIL) and the gate's summary in the commit; when "
      "one fails, nothing changes and the failing evidence is shown (exit status 1). The gate's "
      "result is stored and reused for an unchanged proposal, catalog and models.";
  json schema = {{"type", "object"}, {"required", {"id"}}, {"additionalProperties", false}};
  schema["properties"]["id"] = {
      {"type", "integer"}, {"minimum", 1}, {"description", "The proposal's id."}};
  schema["properties"]["comment"] = {{"type", "string"},
                                     {"description", "Your note, kept with the decision."}};
  schema["properties"]["revision"] = {
      {"type", "integer"},
      {"minimum", 1},
      {"description", "The revision you read (review show); the current one when absent."}};
  schema["properties"]["model_timeout_seconds"] = modelTimeoutField();
  schema["properties"]["decode"] = judgeDecodeField();
  schema["properties"]["regression_sample"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"default", 20},
      {"description",
       "At most this many of the models the catalog passed are checked again "
       "(a sample seeded by the gate's seed when there are more)."}};
  operation.input_schema = schema;
  operation.output_schema = proposalOutputSchema();
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = false};
  operation.over_mcp = false;
  operation.cli = {"review approve",
                   {"id"},
                   {{"model_timeout_seconds", "model-timeout"}, {"regression_sample", "sample"}}};
  operation.run = run;
  operation.render_text = render;
  operation.exit_status = [](const json& output) {
    return output.value("approved", false) ? ExitStatus::kOk : ExitStatus::kFailed;
  };
  return operation;
}

}  // namespace stickler
