// What Stickler's three HTML pages (a saved report, a sweep's report.html, the reviewer's page)
// share: the escaper, the page skeleton and the look of the two that are documents, so a fix
// to any of them reaches every page. Every page is self-contained: its CSS is inline and its
// Content-Security-Policy forbids loading anything, so it opens offline and fetches nothing.
#pragma once

#include <string>

namespace stickler {

// Text made safe inside HTML or XML element content and quoted attribute values: & < > " '
// become references, and the control characters XML 1.0 forbids become spaces. The JUnit
// documents use it too.
std::string escapeMarkup(const std::string& text);

// The look of the pages that are documents to read (a saved report, a sweep): a centred
// column, bordered tables, monospace code and chart labels. The reviewer's page, an
// application with a bar on top, has its own.
extern const char* const kDocumentStyle;

struct HtmlPage {
  std::string title;  // plain text: escaped here
  std::string style;  // the page's CSS, inlined in <style>
  std::string body;   // markup; its text is escaped by whoever wrote it
};

// The whole document: doctype, language, charset, viewport, the Content-Security-Policy,
// title, style, then the body.
std::string renderHtmlPage(const HtmlPage& page);

}  // namespace stickler
