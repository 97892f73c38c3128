// stickler://reviews/{id}: a proposal of the review queue as review_status returns it, for
// clients that subscribe to hear when a reviewer acts (server/mcp/resource_watch.h).
#include <filesystem>

#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"
#include "server/mcp/mcp_review_resources.h"
#include "tools/review/review_support.h"

namespace stickler {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "stickler://reviews/";

std::string storePath(const Workspace& workspace) {
  return (fs::path(workspace.roots().at(0)) / "stickler-adapters" / ".git" /
          "stickler-reviews.sqlite")
      .string();
}

std::optional<int64_t> reviewId(const std::string& uri) {
  if (uri.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string digits = uri.substr(std::string(kPrefix).size());
  if (digits.empty() || digits.size() > 12 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

// The queue, or none when the workspace has none yet (reading must not create it).
std::optional<ProposalStore> openStore(const Workspace& workspace) {
  std::error_code error;
  if (!fs::exists(storePath(workspace), error)) return std::nullopt;
  return ProposalStore(storePath(workspace));
}

}  // namespace

bool isReviewResource(const std::string& uri) {
  return reviewId(uri).has_value();
}

std::string reviewResourceTag(const Workspace& workspace, const std::string& uri) {
  const auto id = reviewId(uri);
  if (!id) return "";
  try {
    auto store = openStore(workspace);
    if (!store) return "";
    const auto proposal = store->find(*id);
    return proposal ? std::to_string(proposal->version) : "";
  } catch (const std::exception&) {
    return "";  // a store being created or damaged: no change to report yet
  }
}

void addReviewResources(McpCatalog& catalog, const Workspace& workspace) {
  catalog.templates.push_back(
      {{{"uriTemplate", "stickler://reviews/{id}"},
        {"name", "review"},
        {"title", "A proposal in the review queue"},
        {"description",
         "A proposal submitted with submit_for_review, as review_status returns it (state, "
         "reviewers' comments, the gate's verdict). Subscribe to it (resources/subscribe) to be "
         "sent notifications/resources/updated when a reviewer acts on it."},
        {"mimeType", "application/json"}},
       [&workspace](const std::string& uri) -> std::optional<json> {
         if (uri.rfind(kPrefix, 0) != 0) return std::nullopt;
         const auto id = reviewId(uri);
         if (!id) {
           throw RpcFailure(rpc_error::kResourceNotFound,
                            "no review " + uri + ": name it stickler://reviews/<id>");
         }
         auto store = openStore(workspace);
         const auto proposal = store ? store->find(*id) : std::nullopt;
         if (!proposal) {
           throw RpcFailure(rpc_error::kResourceNotFound,
                            "no proposal " + std::to_string(*id) + " in the review queue");
         }
         return json::array(
             {{{"uri", uri},
               {"mimeType", "application/json"},
               {"text", proposalDocument(*proposal, store->latestGate(*id)).dump(2)}}});
       },
       [&workspace](const std::string&, const std::string& prefix) {
         std::vector<std::string> ids;
         auto store = openStore(workspace);
         if (!store) return ids;
         for (const Proposal& proposal : store->list()) {
           const std::string id = std::to_string(proposal.id);
           if (id.rfind(prefix, 0) == 0) ids.push_back(id);
         }
         return ids;
       }});
}

}  // namespace stickler
