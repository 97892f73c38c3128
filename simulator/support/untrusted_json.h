// Parsing JSON that comes from outside (MCP messages, model cards, profiles, saved reports)
// without trusting it: nlohmann's parser recurses once per level of nesting, so a message nested
// 70,000 deep overflows the stack and kills the server. The nesting is measured first, in one
// loop, and refused past kMaxJsonDepth; the parser's own message, which quotes the offending
// bytes, is made valid UTF-8 before it goes into a reply.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "simulator/support/errors.h"

namespace stickler {

// Far below any stack limit (a level costs the parser a few hundred bytes), far above any real
// document: Stickler's own reports nest under 12 levels.
inline constexpr size_t kMaxJsonDepth = 256;

// Text that is not JSON, or nests too deeply: what() is one line of valid UTF-8.
class JsonInputError : public UserError {
 public:
  using UserError::UserError;
};

// The deepest nesting of arrays and objects in `text`, not counting brackets inside strings;
// counting stops past `limit` (returns limit + 1).
size_t jsonNestingDepth(std::string_view text, size_t limit = kMaxJsonDepth);

nlohmann::json parseUntrustedJson(std::string_view text);

// `text` with each byte that is not part of valid UTF-8 (and each control character) replaced
// by '?': safe to put into a JSON string and to print.
std::string printableUtf8(std::string_view text);

}  // namespace stickler
