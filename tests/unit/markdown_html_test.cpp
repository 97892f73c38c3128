// A rationale's Markdown as the review page shows it: rendered, with raw HTML left out and only
// addresses a reviewer can follow safely.
#include "tools/reports/markdown_html.h"

#include <gtest/gtest.h>

namespace stickler {
namespace {

TEST(MarkdownHtml, RendersWhatAgentsWrite) {
  const std::string html = markdownToHtml(
      "# Why\n\nThe **pow** of `x` does not lower.\n\n- one\n- two\n\n```python\nx * x\n```\n");
  EXPECT_NE(html.find("<h1>Why</h1>"), std::string::npos) << html;
  EXPECT_NE(html.find("<strong>pow</strong>"), std::string::npos) << html;
  EXPECT_NE(html.find("<code>x</code>"), std::string::npos) << html;
  EXPECT_NE(html.find("<li>two</li>"), std::string::npos) << html;
  EXPECT_NE(html.find("<pre><code class=\"language-python\">x * x\n</code></pre>"),
            std::string::npos)
      << html;
}

TEST(MarkdownHtml, LeavesOutRawHtmlAndEscapesText) {
  const std::string html =
      markdownToHtml("<script>alert(1)</script>\n\nA <img src=x onerror=alert(1)> and 1 < 2 & 3");
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_EQ(html.find("<img"), std::string::npos) << html;
  EXPECT_NE(html.find("1 &lt; 2 &amp; 3"), std::string::npos) << html;
}

TEST(MarkdownHtml, KeepsOnlyAddressesThatAreSafeToFollow) {
  for (const std::string kept : {"https://example.org/a?b#c", "http://example.org",
                                 "mailto:r@example.org", "docs/x.md", "#section", "/review/3"}) {
    const std::string html = markdownToHtml("[link](" + kept + ")");
    EXPECT_NE(html.find("href=\"" + kept + "\""), std::string::npos) << html;
  }
  for (const std::string dropped :
       {"javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,hi", "file:///etc/passwd",
        "vbscript:x", "ftp://example.org/f"}) {
    const std::string html = markdownToHtml("[link](" + dropped + ") ![image](" + dropped + ")");
    EXPECT_NE(html.find("href=\"\""), std::string::npos) << dropped << ": " << html;
    EXPECT_NE(html.find("src=\"\""), std::string::npos) << dropped << ": " << html;
  }
}

}  // namespace
}  // namespace stickler
