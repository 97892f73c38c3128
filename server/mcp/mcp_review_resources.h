// The review queue as MCP resources: stickler://reviews/{id}.
#pragma once

#include <string>

#include "server/mcp/mcp_catalog.h"
#include "server/mcp/workspace.h"

namespace stickler {

void addReviewResources(McpCatalog& catalog, const Workspace& workspace);

bool isReviewResource(const std::string& uri);
// What changes when a reviewer (or the agent) acts on the proposal: its revision; "" when
// there is no such proposal.
std::string reviewResourceTag(const Workspace& workspace, const std::string& uri);

}  // namespace stickler
