// review_status and list_reviews: where proposals stand in the review queue, and what the
// reviewers said.
#include <filesystem>

#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

using nlohmann::json;

json runStatus(const json& input, OperationContext& context) {
  ProposalStore store = openReviewStore(context);
  const int64_t id = input.at("id").get<int64_t>();
  return proposalDocument(store.get(id), store.latestGate(id));
}

std::string renderStatus(const json& output) {
  std::string text = "proposal " + std::to_string(output["id"].get<int64_t>()) + ": " +
                     output["state"].get<std::string>() + " (revision " +
                     std::to_string(output["revision"].get<int64_t>()) + ")\nbranch " +
                     output["branch"].get<std::string>() + " at " +
                     output["commit"].get<std::string>().substr(0, 12) + "\nadapters:";
  for (const auto& adapter : output["adapters"]) {
    text += " " + adapter["name"].get<std::string>();
  }
  text += "\nclaims:";
  for (const auto& claim : output["claims"]) {
    text += " " + claim["model"].get<std::string>() + "@" + claim["profile"].get<std::string>();
  }
  text += "\nrationale: " + output["rationale"].get<std::string>() + "\n";
  for (const auto& event : output["events"]) {
    text += "  " + event["time"].get<std::string>() + "  " + event["actor"].get<std::string>() +
            "  " + event["action"].get<std::string>();
    const std::string& comment = event["comment"].get_ref<const std::string&>();
    // A submission's comment is the rationale, printed once above.
    if (!comment.empty() && comment != output["rationale"].get_ref<const std::string&>()) {
      text += ": " + comment;
    }
    text += "\n";
  }
  if (output.contains("gate") && output["gate"].is_object()) {
    text += "gate (" + output["gate"]["time"].get<std::string>() + ") " +
            output["gate"].value("summary", "") + "\n";
  }
  return text + output["next"].get<std::string>() + "\n";
}

json runList(const json& input, OperationContext& context) {
  std::optional<ProposalState> state;
  if (input.contains("state")) state = stateNamed(input["state"].get<std::string>());
  json proposals = json::array();
  // No catalog yet, so nothing was ever submitted: the queue is empty, not an error.
  if (!std::filesystem::exists(std::filesystem::path(workspaceCatalogDir(context)) / ".git")) {
    return {{"schema", "stickler.proposals"}, {"version", 1}, {"proposals", proposals}};
  }
  for (const Proposal& proposal : openReviewStore(context).list(state)) {
    json entry = proposalToJson(proposal);
    entry.erase("events");
    proposals.push_back(entry);
  }
  return {{"schema", "stickler.proposals"}, {"version", 1}, {"proposals", proposals}};
}

std::string renderList(const json& output) {
  std::string text;
  for (const auto& proposal : output["proposals"]) {
    std::string adapters;
    for (const auto& adapter : proposal["adapters"]) {
      adapters += (adapters.empty() ? "" : ", ") + adapter["name"].get<std::string>();
    }
    text += std::to_string(proposal["id"].get<int64_t>()) + "  " +
            proposal["state"].get<std::string>() + "  " + proposal["submitted"].get<std::string>() +
            "  " + adapters + "\n";
  }
  return text.empty() ? "no proposals in the review queue\n" : text;
}

json idField() {
  return {{"type", "integer"}, {"minimum", 1}, {"description", "The proposal's id."}};
}

}  // namespace

Operation makeReviewStatusOperation() {
  Operation operation;
  operation.name = "review_status";
  operation.title = "Show a proposal in the review queue";
  operation.description =
      "A proposal made with submit_for_review: its state (pending, changes_requested, approved, "
      "rejected, superseded), its adapters with the draft commits proposed, the models claimed, "
      "the rationale and evidence, every action taken on it with the reviewers' comments, and "
      "what to do next.";
  json schema = {{"type", "object"}, {"required", {"id"}}, {"additionalProperties", false}};
  schema["properties"]["id"] = idField();
  operation.input_schema = schema;
  operation.output_schema = proposalOutputSchema();
  operation.cli = {"review show", {"id"}, {}};
  operation.run = runStatus;
  operation.render_text = renderStatus;
  return operation;
}

Operation makeListReviewsOperation() {
  Operation operation;
  operation.name = "list_reviews";
  operation.title = "List the review queue";
  operation.description =
      "The proposals of the workspace's review queue, newest first, with their state, adapters, "
      "claims and what to do next; with state, only those in it.";
  json schema = {{"type", "object"}, {"additionalProperties", false}};
  schema["properties"]["state"] = {
      {"type", "string"},
      {"enum", {"pending", "changes_requested", "approved", "rejected", "superseded"}},
      {"description", "Only proposals in this state."}};
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.proposals"}}}, {"proposals", {{"type", "array"}}}}},
      {"required", {"schema", "proposals"}}};
  operation.cli = {"review list", {}, {}};
  operation.run = runList;
  operation.render_text = renderList;
  return operation;
}

}  // namespace stickler
