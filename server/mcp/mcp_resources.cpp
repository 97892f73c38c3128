// stickler:// resources: the shipped device profiles and the documentation.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/resource_dirs.h"
#include "simulator/support/text_files.h"

namespace stickler {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string docsDirectory() {
  return requireResourceDir("STICKLER_DOCS_DIR", "docs", STICKLER_DOCS_DIR, "documentation");
}

// Pages for the people who maintain the simulator, which agents must not read: where the
// shipped profiles' simulated bugs strike (the device does not tell its bugs).
constexpr const char* kNotServedPages[] = {"simulated-faults"};

std::vector<std::string> docPages() {
  std::vector<std::string> pages;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(docsDirectory(), ec)) {
    const std::string page = entry.path().stem().string();
    if (entry.path().extension() != ".md" ||
        std::find(std::begin(kNotServedPages), std::end(kNotServedPages), page) !=
            std::end(kNotServedPages)) {
      continue;
    }
    pages.push_back(page);
  }
  std::sort(pages.begin(), pages.end());
  return pages;
}

// The first "# " heading of a Markdown page.
std::string titleOf(const std::string& text, const std::string& fallback) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) return line.substr(2);
  }
  return fallback;
}

bool isName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos &&
         name.find("..") == std::string::npos;
}

std::vector<std::string> withPrefix(const std::vector<std::string>& names,
                                    const std::string& prefix) {
  std::vector<std::string> matching;
  for (const auto& name : names) {
    if (name.rfind(prefix, 0) == 0) matching.push_back(name);
  }
  return matching;
}

json textContents(const std::string& uri, const std::string& mime, const std::string& text) {
  return json::array({{{"uri", uri}, {"mimeType", mime}, {"text", text}}});
}

std::optional<json> readProfile(const std::string& uri) {
  const std::string prefix = "stickler://profiles/";
  if (uri.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string name = uri.substr(prefix.size());
  const auto names = listProfiles();
  if (!isName(name) || std::find(names.begin(), names.end(), name) == names.end()) {
    throw RpcFailure(rpc_error::kResourceNotFound, "no device profile " + uri);
  }
  // The profile as agents see it: no fault rules (docs/device-profiles.md).
  const std::string path = profileDirectory() + "/" + name + ".json";
  const DeviceProfile profile = loadProfile(name);
  return textContents(
      uri, "application/json",
      profileForAgents(profile, nlohmann::json::parse(readTextFile(path))).dump(2) + "\n");
}

std::optional<json> readDoc(const std::string& uri) {
  const std::string prefix = "stickler://docs/";
  if (uri.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string page = uri.substr(prefix.size());
  const auto pages = docPages();
  if (!isName(page) || std::find(pages.begin(), pages.end(), page) == pages.end()) {
    throw RpcFailure(rpc_error::kResourceNotFound, "no documentation page " + uri);
  }
  return textContents(uri, "text/markdown", readTextFile(docsDirectory() + "/" + page + ".md"));
}

}  // namespace

void addSticklerResources(McpCatalog& catalog) {
  for (const auto& name : listProfiles()) {
    std::string description;
    try {
      description = loadProfile(name).description;
    } catch (const std::exception&) {
    }
    const std::string uri = "stickler://profiles/" + name;
    catalog.resources.push_back({{{"uri", uri},
                                  {"name", name},
                                  {"title", "Device profile " + name},
                                  {"description", description},
                                  {"mimeType", "application/json"}},
                                 [uri] { return *readProfile(uri); }});
  }
  for (const auto& page : docPages()) {
    const std::string uri = "stickler://docs/" + page;
    const std::string title = titleOf(readTextFile(docsDirectory() + "/" + page + ".md"), page);
    catalog.resources.push_back({{{"uri", uri},
                                  {"name", page},
                                  {"title", title},
                                  {"description", "Stickler documentation: " + title},
                                  {"mimeType", "text/markdown"}},
                                 [uri] { return *readDoc(uri); }});
  }
  catalog.templates.push_back(
      {{{"uriTemplate", "stickler://profiles/{name}"},
        {"name", "device-profile"},
        {"title", "A device profile"},
        {"description",
         "A Spyre device profile (JSON): hardware, operator table, fusion, its lineage and "
         "content hash. Its fault rules are withheld: the device does not tell its bugs."},
        {"mimeType", "application/json"}},
       readProfile,
       [](const std::string&, const std::string& prefix) {
         return withPrefix(listProfiles(), prefix);
       }});
  catalog.templates.push_back(
      {{{"uriTemplate", "stickler://docs/{page}"},
        {"name", "documentation"},
        {"title", "A documentation page"},
        {"description", "Stickler's documentation: formats, backends, assumptions (Markdown)."},
        {"mimeType", "text/markdown"}},
       readDoc,
       [](const std::string&, const std::string& prefix) {
         return withPrefix(docPages(), prefix);
       }});
}

}  // namespace stickler
