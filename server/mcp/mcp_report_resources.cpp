// stickler://reports and stickler://repros: the reports diagnose_model and localize_divergence
// saved in the workspace (JSON, or rendered as HTML or JUnit XML on demand) and the repro
// bundles diagnose_model wrote under the workspace's stickler-repros/.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"
#include "simulator/support/text_files.h"
#include "tools/reports/html_report.h"
#include "tools/reports/junit_report.h"
#include "tools/reports/report_store.h"

namespace stickler {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A report's renderings, by the extension its URI asks for.
struct Rendering {
  const char* extension;
  const char* mime;
};
constexpr Rendering kRenderings[] = {
    {".json", "application/json"}, {".html", "text/html"}, {".xml", "application/xml"}};

std::optional<json> readReport(const Workspace& workspace, const std::string& uri) {
  const std::string prefix = "stickler://reports/";
  if (uri.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string file = uri.substr(prefix.size());
  const ReportStore store(workspace.roots().at(0));
  for (const Rendering& rendering : kRenderings) {
    const std::string extension = rendering.extension;
    if (file.size() <= extension.size() ||
        file.compare(file.size() - extension.size(), extension.size(), extension) != 0) {
      continue;
    }
    const std::string id = file.substr(0, file.size() - extension.size());
    json report;
    try {
      report = store.load(id);
    } catch (const std::exception& e) {
      throw RpcFailure(rpc_error::kResourceNotFound, e.what());
    }
    const std::string text = extension == ".json"   ? report.dump(2)
                             : extension == ".html" ? renderHtmlReport(report)
                                                    : renderJunitReport(report);
    return json::array({{{"uri", uri}, {"mimeType", rendering.mime}, {"text", text}}});
  }
  throw RpcFailure(rpc_error::kResourceNotFound,
                   "no report " + uri + ": name it <id>.json, <id>.html or <id>.xml");
}

std::vector<std::string> reportFiles(const Workspace& workspace, const std::string& prefix) {
  std::vector<std::string> files;
  for (const std::string& id : ReportStore(workspace.roots().at(0)).ids()) {
    for (const Rendering& rendering : kRenderings) {
      const std::string file = id + rendering.extension;
      if (file.rfind(prefix, 0) == 0) files.push_back(file);
    }
  }
  return files;
}

std::string base64(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string encoded;
  encoded.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 2]);
    encoded += alphabet[(group >> 18) & 63];
    encoded += alphabet[(group >> 12) & 63];
    encoded += i + 1 < bytes.size() ? alphabet[(group >> 6) & 63] : '=';
    encoded += i + 2 < bytes.size() ? alphabet[group & 63] : '=';
  }
  return encoded;
}

bool isName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::string reprosDirectory(const Workspace& workspace) {
  return (fs::path(workspace.roots().at(0)) / "stickler-repros").string();
}

// stickler://repros/<model>/<bundle>/<file>: README.md as text, repro.pt as a blob.
std::optional<json> readRepro(const Workspace& workspace, const std::string& uri) {
  const std::string prefix = "stickler://repros/";
  if (uri.rfind(prefix, 0) != 0) return std::nullopt;
  std::vector<std::string> parts;
  std::stringstream rest(uri.substr(prefix.size()));
  for (std::string part; std::getline(rest, part, '/');) parts.push_back(part);
  if (parts.size() != 3 || !std::all_of(parts.begin(), parts.end(), isName) ||
      (parts[2] != "README.md" && parts[2] != "repro.pt")) {
    throw RpcFailure(rpc_error::kResourceNotFound,
                     "no repro bundle file " + uri +
                         ": name it stickler://repros/<model>/<bundle>/README.md or repro.pt");
  }
  const fs::path path = fs::path(reprosDirectory(workspace)) / parts[0] / parts[1] / parts[2];
  // A symlink inside stickler-repros must not lead out of the workspace.
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec) throw RpcFailure(rpc_error::kResourceNotFound, "no repro bundle file " + uri);
  try {
    workspace.resolve(real.string());
  } catch (const std::exception& e) {
    throw RpcFailure(rpc_error::kResourceNotFound, e.what());
  }
  const std::string bytes = readTextFile(real.string());
  if (parts[2] == "README.md") {
    return json::array({{{"uri", uri}, {"mimeType", "text/markdown"}, {"text", bytes}}});
  }
  return json::array({{{"uri", uri}, {"mimeType", "application/zip"}, {"blob", base64(bytes)}}});
}

// Completions of one path component: the entries of `directory` starting with `prefix`.
std::vector<std::string> entriesOf(const fs::path& directory, const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.front() != '.') names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

void addReportResources(McpCatalog& catalog, const Workspace& workspace) {
  catalog.templates.push_back(
      {{{"uriTemplate", "stickler://reports/{report}"},
        {"name", "report"},
        {"title", "A saved diagnosis or localization report"},
        {"description",
         "A report saved by diagnose_model or localize_divergence, by report_id: <id>.json (the "
         "documented schema), <id>.html (a self-contained page for people) or <id>.xml (JUnit)."},
        {"mimeType", "application/json"}},
       [&workspace](const std::string& uri) { return readReport(workspace, uri); },
       [&workspace](const std::string&, const std::string& prefix) {
         return reportFiles(workspace, prefix);
       }});
  catalog.templates.push_back(
      {{{"uriTemplate", "stickler://repros/{model}/{bundle}/{file}"},
        {"name", "repro-bundle"},
        {"title", "A file of a repro bundle"},
        {"description",
         "A repro bundle diagnose_model wrote under the workspace's stickler-repros/: README.md "
         "(the command that reproduces the failure) or repro.pt (the TorchScript archive, as a "
         "blob)."},
        {"mimeType", "text/markdown"}},
       [&workspace](const std::string& uri) { return readRepro(workspace, uri); },
       [&workspace](const std::string& argument, const std::string& prefix) {
         // Completion knows only the variable being completed, so models and bundles are
         // offered from the directories as they stand.
         const fs::path root = reprosDirectory(workspace);
         if (argument == "model") return entriesOf(root, prefix);
         if (argument == "file") {
           std::vector<std::string> files;
           for (const char* name : {"README.md", "repro.pt"}) {
             if (std::string(name).rfind(prefix, 0) == 0) files.emplace_back(name);
           }
           return files;
         }
         std::vector<std::string> bundles;
         for (const auto& model : entriesOf(root, "")) {
           for (auto& bundle : entriesOf(root / model, prefix)) bundles.push_back(bundle);
         }
         return bundles;
       }});
}

}  // namespace stickler
