// Markdown written by agents (a proposal's rationale), rendered as HTML for a reviewer with
// cmark, safely: raw HTML is left out, and a link or image keeps its address only when it is
// http, https, mailto or relative; any other (javascript:, data:, file:) is emptied.
#pragma once

#include <string>

namespace stickler {

std::string markdownToHtml(const std::string& markdown);

}  // namespace stickler
