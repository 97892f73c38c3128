// Commit messages of the catalog: a subject, an optional body, and git trailers that make the
// history machine-readable (`git log --format='%(trailers)'` shows them). Private to
// adapters/catalog_repo/.
#pragma once

#include <string>
#include <utility>

#include "adapters/catalog_repo/workspace_catalog.h"

namespace stickler::catalog {

// The trailers Stickler writes itself; callers may not, so that a tool reading history can
// trust them.
inline constexpr const char* kAdapterKey = "Adapter";
inline constexpr const char* kActionKey = "Stickler-Action";
inline constexpr const char* kRevertsKey = "Reverts";

struct MessageText {
  std::string subject;
  std::string body;
};

struct ParsedMessage {
  std::string subject;
  std::string body;
  Trailers trailers;
};

// Splits what a caller wrote (a reason, a summary) into a one-line subject and a body. Throws
// UserError naming `what` when there is no subject.
MessageText splitText(const std::string& text, const std::string& what);

// Throws UserError on a key that is not a git trailer token, a value that is empty or spans
// lines, or a key Stickler reserves for itself.
void validateCallerTrailers(const Trailers& trailers);

// "subject\n\nbody\n\nKey: value\n...": git's layout, so that git's own trailer parser agrees.
std::string composeMessage(const MessageText& text, const Trailers& trailers);

ParsedMessage parseMessage(const std::string& message);

// The value of the first trailer with `key`, or "" when there is none.
std::string trailerValue(const Trailers& trailers, const std::string& key);

}  // namespace stickler::catalog
