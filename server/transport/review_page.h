// The reviewer's page (issue 16): the review queue as HTML at /review of `stickler serve --http`
// and `stickler review serve`. Server-rendered pages with plain forms: no script, nothing
// fetched from anywhere. The transport authenticates and checks Host and Origin first; this
// renders and acts (docs/review.md, "The reviewer's page").
#pragma once

#include <map>
#include <string>

namespace stickler {

struct PageRequest {
  std::string method;  // GET or POST
  std::string path;    // /review, /review/3, /review/3/approve, /review/reports/<id>.html
  std::map<std::string, std::string> params;  // query string and form fields
};

struct PageResponse {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  std::string location;  // a redirect (303) when set
};

// Whether `path` belongs to the page.
bool isReviewPagePath(const std::string& path);

// Renders or acts for a request to the page of the workspace at `workspace_root`. Decisions are
// made as the server's user (GIT_AUTHOR_NAME/EMAIL), like the command line's.
PageResponse handleReviewPage(const std::string& workspace_root, const PageRequest& request);

}  // namespace stickler
