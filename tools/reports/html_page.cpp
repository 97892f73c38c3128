#include "tools/reports/html_page.h"

namespace stickler {

std::string escapeMarkup(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          escaped += ' ';
        } else {
          escaped += c;
        }
    }
  }
  return escaped;
}

const char* const kDocumentStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1100px;color:#1d232b;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #d8dde3;padding-bottom:.2em}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.92em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #d8dde3;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f6f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:1.2em}.swatch{display:inline-block;width:.9em;height:.9em;vertical-align:-.1em;margin-right:.3em}
svg .grid{stroke:#e3e7ec}
svg text{font:11px ui-monospace,"DejaVu Sans Mono",monospace;fill:#1d232b}
)";

std::string renderHtmlPage(const HtmlPage& page) {
  // The policy rides in the page so a saved file keeps it wherever it is opened; the review
  // server adds a stricter one as a header, and a browser enforces both.
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
         "'unsafe-inline'\">\n<title>" +
         escapeMarkup(page.title) + "</title>\n<style>" + page.style +
         "</style>\n</head>\n<body>\n" + page.body + "</body>\n</html>\n";
}

}  // namespace stickler
