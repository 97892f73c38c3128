// stickler://pattern-reference: how to write each aten operator in an adapter's pattern, made
// by the rewrite compiler when read (adapters/engine/pattern_reference.h).
#include "adapters/engine/pattern_reference.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"
#include "simulator/support/errors.h"

namespace stickler {

using nlohmann::json;

namespace {

constexpr const char* kPage = "stickler://pattern-reference";

json markdownContents(const std::string& uri, const std::string& text) {
  return json::array({{{"uri", uri}, {"mimeType", "text/markdown"}, {"text", text}}});
}

std::optional<json> readOperator(const std::string& uri) {
  const std::string prefix = std::string(kPage) + "/";
  if (uri.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string op = uri.substr(prefix.size());
  try {
    return markdownContents(uri, operatorReferenceMarkdown(op));
  } catch (const UserError& e) {
    throw RpcFailure(rpc_error::kResourceNotFound,
                     "no pattern reference for " + uri + ": " + e.what());
  }
}

}  // namespace

void addPatternReferenceResources(McpCatalog& catalog) {
  catalog.resources.push_back(
      {{{"uri", kPage},
        {"name", "pattern-reference"},
        {"title", "Pattern reference"},
        {"description",
         "How to write each operator the device profiles name in an adapter's pattern: for "
         "every overload, a pattern the rewrite compiler compiled to it (Markdown; the same "
         "text as docs/pattern-reference.md)."},
        {"mimeType", "text/markdown"}},
       [] { return markdownContents(kPage, patternReferenceMarkdown()); }});
  catalog.templates.push_back(
      {{{"uriTemplate", std::string(kPage) + "/{op}"},
        {"name", "operator-pattern"},
        {"title", "One operator in a pattern"},
        {"description",
         "How to write any aten operator (e.g. aten::nonzero) in an adapter's pattern, every "
         "overload, made by the rewrite compiler when read (Markdown)."},
        {"mimeType", "text/markdown"}},
       readOperator,
       [](const std::string&, const std::string& prefix) {
         std::vector<std::string> matching;
         for (const auto& op : referenceOperators()) {
           if (op.rfind(prefix, 0) == 0) matching.push_back(op);
         }
         return matching;
       }});
}

}  // namespace stickler
