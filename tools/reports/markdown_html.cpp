#include "tools/reports/markdown_html.h"

#include <cmark.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace stickler {
namespace {

// A scheme is what comes before the first ':' when no '/', '?' or '#' comes first; an address
// without one is relative.
bool allowedAddress(const std::string& url) {
  const size_t colon = url.find(':');
  const size_t path = url.find_first_of("/?#");
  if (colon == std::string::npos || (path != std::string::npos && path < colon)) return true;
  std::string scheme = url.substr(0, colon);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return scheme == "http" || scheme == "https" || scheme == "mailto";
}

struct NodeDeleter {
  void operator()(cmark_node* node) const { cmark_node_free(node); }
};
struct IterDeleter {
  void operator()(cmark_iter* iter) const { cmark_iter_free(iter); }
};

}  // namespace

std::string markdownToHtml(const std::string& markdown) {
  // Without CMARK_OPT_UNSAFE, cmark replaces raw HTML with a comment and empties
  // javascript:, vbscript:, file: and most data: addresses; the walk below narrows addresses
  // further to those a reviewer can follow safely.
  const int options = CMARK_OPT_DEFAULT | CMARK_OPT_NOBREAKS | CMARK_OPT_VALIDATE_UTF8;
  std::unique_ptr<cmark_node, NodeDeleter> document(
      cmark_parse_document(markdown.data(), markdown.size(), options));
  if (!document) return "";
  std::unique_ptr<cmark_iter, IterDeleter> iter(cmark_iter_new(document.get()));
  for (cmark_event_type event; (event = cmark_iter_next(iter.get())) != CMARK_EVENT_DONE;) {
    if (event != CMARK_EVENT_ENTER) continue;
    cmark_node* node = cmark_iter_get_node(iter.get());
    const cmark_node_type type = cmark_node_get_type(node);
    if (type != CMARK_NODE_LINK && type != CMARK_NODE_IMAGE) continue;
    const char* url = cmark_node_get_url(node);
    if (url != nullptr && !allowedAddress(url)) cmark_node_set_url(node, "");
  }
  char* html = cmark_render_html(document.get(), options);
  if (html == nullptr) return "";
  std::string rendered(html);
  free(html);  // NOLINT(cppcoreguidelines-no-malloc): cmark allocates with malloc
  return rendered;
}

}  // namespace stickler
