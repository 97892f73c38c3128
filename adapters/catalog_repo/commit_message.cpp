#include "adapters/catalog_repo/commit_message.h"

#include <git2.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "simulator/support/errors.h"
#include "simulator/support/git_support.h"
#include "simulator/support/text_format.h"

namespace stickler::catalog {
namespace {

bool isBlank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    lines.push_back(line);
  }
  return lines;
}

// Paragraphs as git sees them: runs of non-blank lines.
std::vector<std::vector<std::string>> paragraphsOf(const std::string& text) {
  std::vector<std::vector<std::string>> paragraphs;
  bool in_paragraph = false;
  for (const std::string& line : linesOf(text)) {
    if (isBlank(line)) {
      in_paragraph = false;
      continue;
    }
    if (!in_paragraph) {
      paragraphs.emplace_back();
      in_paragraph = true;
    }
    paragraphs.back().push_back(line);
  }
  return paragraphs;
}

std::string joined(const std::vector<std::string>& lines, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    text += (i == 0 ? "" : separator) + lines[i];
  }
  return text;
}

bool isTrailerToken(const std::string& key) {
  if (key.empty() || !std::isalpha(static_cast<unsigned char>(key[0]))) {
    return false;
  }
  return std::all_of(key.begin(), key.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-'; });
}

bool equalsIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void validateCallerTrailer(const std::string& key, const std::string& value) {
  if (!isTrailerToken(key)) {
    throw UserError("invalid trailer key \"" + key +
                    "\": use a letter followed by letters, digits and hyphens, e.g. Evidence");
  }
  for (const char* reserved : {kAdapterKey, kActionKey, kRevertsKey}) {
    if (equalsIgnoringCase(key, reserved)) {
      throw UserError("trailer " + key + " is written by Stickler itself: leave it out");
    }
  }
  if (trimmed(value).empty()) {
    throw UserError("trailer " + key + " has an empty value");
  }
  if (value.find_first_of("\r\n") != std::string::npos) {
    throw UserError("trailer " + key + " must fit on one line");
  }
}

}  // namespace

MessageText splitText(const std::string& text, const std::string& what) {
  const std::vector<std::string> lines = linesOf(trimmed(text));
  if (lines.empty()) {
    throw UserError("the " + what + " is empty: say in one line what changed and why");
  }
  MessageText message{trimmed(lines.front()), ""};
  const std::vector<std::string> rest(lines.begin() + 1, lines.end());
  message.body = trimmed(joined(rest, "\n"));
  return message;
}

void validateCallerTrailers(const Trailers& trailers) {
  for (const auto& [key, value] : trailers) {
    validateCallerTrailer(key, value);
  }
}

std::string composeMessage(const MessageText& text, const Trailers& trailers) {
  std::string message = text.subject + "\n";
  if (!text.body.empty()) {
    message += "\n" + text.body + "\n";
  }
  if (!trailers.empty()) {
    message += "\n";
    for (const auto& [key, value] : trailers) {
      message += key + ": " + trimmed(value) + "\n";
    }
  }
  return message;
}

ParsedMessage parseMessage(const std::string& message) {
  ParsedMessage parsed;
  git_message_trailer_array found{};
  git::check(git_message_trailers(&found, message.c_str()), "cannot parse commit trailers");
  for (size_t i = 0; i < found.count; ++i) {
    parsed.trailers.emplace_back(found.trailers[i].key, found.trailers[i].value);
  }
  git_message_trailer_array_free(&found);

  auto paragraphs = paragraphsOf(message);
  if (paragraphs.empty()) {
    return parsed;
  }
  parsed.subject = joined(paragraphs.front(), " ");  // as git's %s joins a wrapped subject
  paragraphs.erase(paragraphs.begin());
  // git only ever reads trailers from the last paragraph, so that paragraph is the block.
  if (!parsed.trailers.empty() && !paragraphs.empty()) {
    paragraphs.pop_back();
  }
  std::vector<std::string> body;
  body.reserve(paragraphs.size());
  for (const auto& paragraph : paragraphs) {
    body.push_back(joined(paragraph, "\n"));
  }
  parsed.body = joined(body, "\n\n");
  return parsed;
}

std::string trailerValue(const Trailers& trailers, const std::string& key) {
  for (const auto& [found_key, value] : trailers) {
    if (found_key == key) {
      return value;
    }
  }
  return "";
}

}  // namespace stickler::catalog
