// One knowledge-base page: Markdown with front matter (id, title, tags, sources, and the
// profile facts it states), split into the sections search results point at. Pages, skills
// (SKILL.md: name, description) and recorded gotchas all read this way.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace stickler {

struct KbSection {
  std::string heading;  // "" for the text before the first "## " heading
  std::string text;     // the section's Markdown, heading line included
};

struct KbPage {
  std::string id;
  std::string kind;  // "page", "skill" or "gotcha"
  std::string title;
  std::string description;  // skills: when to use them
  std::vector<std::string> tags;
  std::vector<std::string> sources;
  std::map<std::string, std::string> profile_facts;  // "device.stick_bytes" -> "128"
  std::map<std::string, std::string> front_matter;   // every key as written
  std::string body;                                  // the Markdown after the front matter
  std::vector<KbSection> sections;
  std::string path;
};

// Parses `text` (from `path`, named in errors). Throws UserError for a page without front
// matter or without an id (or, for a skill, a name), naming the file and line.
KbPage parseKbPage(const std::string& text, const std::string& path, const std::string& kind);

// The pages of `kind` in `directory`: every *.md (pages, gotchas) or every */SKILL.md (skills),
// sorted by id. A missing directory has none. A file that is not a page is left out, and why
// is added to `problems` ("path:line: ...").
std::vector<KbPage> loadKbPages(const std::string& directory, const std::string& kind,
                                std::vector<std::string>& problems);

}  // namespace stickler
