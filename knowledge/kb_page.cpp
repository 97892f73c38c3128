#include "knowledge/kb_page.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"
#include "simulator/support/text_format.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

// A value with any surrounding quotes removed.
std::string unquoted(const std::string& text) {
  std::string value = trimmed(text);
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

// "[a, b, c]" (or a single value) as a list.
std::vector<std::string> listOf(const std::string& text) {
  std::string value = trimmed(text);
  std::vector<std::string> items;
  if (value.empty()) return items;
  if (value.front() == '[' && value.back() == ']') value = value.substr(1, value.size() - 2);
  std::stringstream parts(value);
  for (std::string part; std::getline(parts, part, ',');) {
    if (!trimmed(part).empty()) items.push_back(unquoted(part));
  }
  return items;
}

// "{a: 1, b: 2}" as a map.
std::map<std::string, std::string> mapOf(const std::string& text, const std::string& where) {
  std::string value = trimmed(text);
  if (value.size() < 2 || value.front() != '{' || value.back() != '}') {
    throw UserError(where + ": expected {key: value, ...}");
  }
  std::map<std::string, std::string> entries;
  for (const std::string& item : listOf(value.substr(1, value.size() - 2))) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw UserError(where + ": '" + item + "' is not key: value");
    entries[trimmed(item.substr(0, colon))] = unquoted(item.substr(colon + 1));
  }
  return entries;
}

std::vector<KbSection> sectionsOf(const std::string& body) {
  std::vector<KbSection> sections(1);
  std::istringstream lines(body);
  bool fenced = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (!fenced && line.rfind("## ", 0) == 0) sections.push_back({trimmed(line.substr(3)), ""});
    sections.back().text += line + "\n";
  }
  if (trimmed(sections.front().text).empty() && sections.size() > 1) {
    sections.erase(sections.begin());
  }
  return sections;
}

}  // namespace

KbPage parseKbPage(const std::string& text, const std::string& path, const std::string& kind) {
  KbPage page;
  page.kind = kind;
  page.path = path;
  std::istringstream lines(text);
  std::string line;
  int number = 1;
  if (!std::getline(lines, line) || trimmed(line) != "---") {
    throw UserError(path + ":1: a page starts with front matter (a line '---')");
  }
  bool closed = false;
  while (std::getline(lines, line)) {
    ++number;
    if (trimmed(line) == "---") {
      closed = true;
      break;
    }
    if (trimmed(line).empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) {
      throw UserError(path + ":" + std::to_string(number) + ": expected 'key: value'");
    }
    page.front_matter[trimmed(line.substr(0, colon))] = trimmed(line.substr(colon + 1));
  }
  if (!closed) throw UserError(path + ": the front matter has no closing '---'");
  std::stringstream rest;
  rest << lines.rdbuf();
  page.body = rest.str();
  const auto field = [&](const char* key) {
    auto found = page.front_matter.find(key);
    return found == page.front_matter.end() ? std::string() : unquoted(found->second);
  };
  page.id = kind == "skill" ? field("name") : field("id");
  if (page.id.empty()) {
    throw UserError(path + ": the front matter has no " + (kind == "skill" ? "name" : "id"));
  }
  page.description = field("description");
  page.title = field("title");
  page.tags = listOf(field("tags"));
  page.sources = listOf(field("sources"));
  if (page.front_matter.count("profile_facts")) {
    page.profile_facts = mapOf(page.front_matter["profile_facts"], path + ": profile_facts");
  }
  page.sections = sectionsOf(page.body);
  if (page.title.empty()) {  // the first "# " heading
    std::istringstream body(page.body);
    for (std::string body_line; std::getline(body, body_line);) {
      if (body_line.rfind("# ", 0) == 0) {
        page.title = trimmed(body_line.substr(2));
        break;
      }
    }
  }
  if (page.title.empty()) page.title = page.id;
  return page;
}

std::vector<KbPage> loadKbPages(const std::string& directory, const std::string& kind,
                                std::vector<std::string>& problems) {
  std::vector<KbPage> pages;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const fs::path file = kind == "skill" ? entry.path() / "SKILL.md" : entry.path();
    if (kind != "skill" && file.extension() != ".md") continue;
    if (!fs::is_regular_file(file, ec) || file.filename().string().front() == '.') continue;
    // One page at a time, so that one malformed file leaves the rest.
    try {
      pages.push_back(parseKbPage(readTextFile(file.string()), file.string(), kind));
    } catch (const std::exception& e) {
      problems.emplace_back(e.what());
    }
  }
  std::sort(pages.begin(), pages.end(),
            [](const KbPage& a, const KbPage& b) { return a.id < b.id; });
  return pages;
}

}  // namespace stickler
