#include "tools/knowledge/knowledge_support.h"

#include <filesystem>

#include "tools/framework/operation.h"

namespace stickler {

std::string gotchasDirectory(OperationContext& context) {
  return (std::filesystem::path(context.workspaceRoot()) / "stickler-gotchas").string();
}

std::string knowledgeUri(const std::string& kind, const std::string& id) {
  const std::string prefix = kind == "page"    ? "stickler://knowledge/"
                             : kind == "skill" ? "stickler://skills/"
                                               : "stickler://gotchas/";
  return prefix + id;
}

}  // namespace stickler
