#include "server/transport/review_page.h"

#include <cctype>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "simulator/support/errors.h"
#include "simulator/support/text_format.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/html_page.h"
#include "tools/reports/html_report.h"
#include "tools/reports/markdown_html.h"
#include "tools/reports/report_store.h"
#include "tools/review/review_approval.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

using nlohmann::json;

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2125;background:#fafbfc}
header{background:#243447;color:#fff;padding:10px 24px}header a{color:#fff;text-decoration:none}
main{padding:16px 24px;max-width:1200px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #dde2e6;padding:6px 8px;text-align:left;vertical-align:top}
.state{display:inline-block;padding:1px 8px;border-radius:9px;font-size:12px;background:#e3e8ec}
.state.pending{background:#fff3c4}.state.approved{background:#c8ecd0}
.state.rejected{background:#f6cccc}.state.changes_requested{background:#ffe0b8}
.filters a{margin-right:10px}.filters a.on{font-weight:bold}
.notice{padding:8px 12px;border-radius:4px;margin:8px 0;background:#e6f4ea}
.error{padding:8px 12px;border-radius:4px;margin:8px 0;background:#fbe4e4}
pre.diff{background:#fff;border:1px solid #dde2e6;padding:8px;overflow:auto;font:13px/1.4 monospace}
.add{background:#e6ffed;display:block}.del{background:#ffeef0;display:block}
.hunk{color:#6a737d;display:block}.file{font-weight:bold;display:block}
.kw{color:#d73a49}.str{color:#032f62}.com{color:#6a737d;font-style:italic}.num{color:#005cc5}
.pass{color:#176f2c;font-weight:bold}.fail{color:#b31d28;font-weight:bold}
form.action{display:inline-block;margin:4px 12px 4px 0;vertical-align:top}
textarea{width:360px;height:60px}
#events pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
.markdown{background:#fff;border:1px solid #dde2e6;padding:4px 12px;overflow-wrap:anywhere}
.markdown pre{white-space:pre-wrap;background:#f6f8fa;padding:8px}
.markdown code{font:13px monospace;background:#f6f8fa}
)";

// Every page of the queue: the bar back to the queue on top, the page's own content below.
std::string page(const std::string& title, const std::string& body) {
  return renderHtmlPage(
      {.title = title,
       .style = kStyle,
       .body = "<header><a href=\"/review\">Stickler review queue</a></header><main>" + body +
               "</main>\n"});
}

std::string stateBadge(const std::string& state) {
  return "<span class=\"state " + escapeMarkup(state) + "\">" + escapeMarkup(state) + "</span>";
}

// Python, a line at a time: keywords, strings, comments and numbers get a class each.
std::string highlightPython(const std::string& line) {
  static const std::set<std::string> keywords = {
      "def", "return", "import", "from", "class",  "if",    "elif",  "else",   "for",
      "in",  "and",    "or",     "not",  "None",   "True",  "False", "lambda", "with",
      "as",  "pass",   "raise",  "try",  "except", "while", "is",    "assert", "yield"};
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == '#') {
      out += "<span class=\"com\">" + escapeMarkup(line.substr(i)) + "</span>";
      break;
    }
    if (c == '"' || c == '\'') {
      size_t end = i + 1;
      while (end < line.size() && line[end] != c) end += line[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, line.size());
      out += "<span class=\"str\">" + escapeMarkup(line.substr(i, end - i)) + "</span>";
      i = end;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = i;
      while (end < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) {
        ++end;
      }
      const std::string word = line.substr(i, end - i);
      out +=
          keywords.count(word) > 0 ? "<span class=\"kw\">" + word + "</span>" : escapeMarkup(word);
      i = end;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = i;
      while (end < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '.')) {
        ++end;
      }
      out += "<span class=\"num\">" + escapeMarkup(line.substr(i, end - i)) + "</span>";
      i = end;
      continue;
    }
    out += escapeMarkup(std::string(1, c));
    ++i;
  }
  return out;
}

std::string renderDiff(const std::string& patch) {
  std::string out = "<pre class=\"diff\" id=\"diff\">";
  size_t start = 0;
  while (start < patch.size()) {
    size_t end = patch.find('\n', start);
    if (end == std::string::npos) end = patch.size();
    const std::string line = patch.substr(start, end - start);
    start = end + 1;
    if (line.rfind("diff --git", 0) == 0 || line.rfind("+++", 0) == 0 ||
        line.rfind("---", 0) == 0 || line.rfind("index ", 0) == 0 ||
        line.rfind("new file", 0) == 0) {
      out += "<span class=\"file\">" + escapeMarkup(line) + "</span>";
    } else if (line.rfind("@@", 0) == 0) {
      out += "<span class=\"hunk\">" + escapeMarkup(line) + "</span>";
    } else if (!line.empty() && (line[0] == '+' || line[0] == '-')) {
      out += std::string("<span class=\"") + (line[0] == '+' ? "add" : "del") + "\">" + line[0] +
             highlightPython(line.substr(1)) + "</span>";
    } else {
      out += highlightPython(line) + "\n";
    }
  }
  return out + "</pre>";
}

std::string modelName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string renderQueue(const std::string& root, const PageRequest& request) {
  RootedContext context(root);
  const std::string wanted = request.params.count("state") ? request.params.at("state") : "";
  std::optional<ProposalState> state;
  if (!wanted.empty()) {
    state = stateNamed(wanted);
    if (!state) throw UserError("no state '" + wanted + "'");
  }
  std::string body = "<h1>Review queue</h1><p class=\"filters\" id=\"filters\">Show: ";
  for (const char* name :
       {"", "pending", "changes_requested", "approved", "rejected", "superseded"}) {
    const std::string label = *name == 0 ? "all" : name;
    body += "<a href=\"/review" + std::string(*name == 0 ? "" : "?state=") + name + "\"" +
            (wanted == name ? " class=\"on\"" : "") + ">" + label + "</a>";
  }
  body += "</p>";
  std::filesystem::path catalog = std::filesystem::path(root) / "stickler-adapters" / ".git";
  std::error_code error;
  if (!std::filesystem::exists(catalog, error)) {
    return page("Review queue", body + "<p>No adapter catalog in this workspace yet.</p>");
  }
  ProposalStore store = openReviewStore(context);
  body +=
      "<table id=\"queue\"><tr><th>#</th><th>state</th><th>adapters</th><th>claims</th>"
      "<th>author</th><th>submitted</th><th>gate</th></tr>";
  const auto proposals = store.list(state);
  for (const Proposal& proposal : proposals) {
    const std::string id = std::to_string(proposal.id);
    std::string adapters;
    for (const auto& adapter : proposal.adapters) {
      adapters += (adapters.empty() ? "" : ", ") + escapeMarkup(adapter.name);
    }
    std::string claims;
    for (const auto& claim : proposal.claims) {
      claims += (claims.empty() ? "" : "<br>") + escapeMarkup(modelName(claim.model)) + " @ " +
                escapeMarkup(claim.profile);
    }
    const auto gate = store.latestGate(proposal.id);
    const std::string gate_cell = !gate          ? "&mdash;"
                                  : gate->passed ? "<span class=\"pass\">passed</span>"
                                                 : "<span class=\"fail\">failed</span>";
    body += "<tr data-id=\"" + id + "\"><td><a href=\"/review/" + id + "\">" + id +
            "</a></td><td>" + stateBadge(stateName(proposal.state)) + "</td><td>" + adapters +
            "</td><td>" + claims + "</td><td>" + escapeMarkup(proposal.author) + "</td><td>" +
            escapeMarkup(proposal.submitted) + "</td><td>" + gate_cell + "</td></tr>";
  }
  body += "</table>";
  if (proposals.empty()) body += "<p id=\"empty\">No proposals here.</p>";
  return page("Review queue", body);
}

std::string renderEvidence(const std::string& root, const Proposal& proposal) {
  std::string body = "<h2>Evidence</h2><ul id=\"evidence\">";
  const ReportStore reports(root);
  for (const std::string& id : proposal.evidence) {
    body += "<li><a href=\"/review/reports/" + escapeMarkup(id) + ".html\">" + escapeMarkup(id) +
            "</a>";
    try {
      const json report = reports.load(id);
      const std::string verdict =
          report.value("verdict", report.value("status", std::string("saved")));
      body += ": " + escapeMarkup(reportKind(report)) + ", " + escapeMarkup(verdict);
    } catch (const std::exception& e) {
      body += ": <span class=\"fail\">" + escapeMarkup(e.what()) + "</span>";
    }
    body += "</li>";
  }
  if (proposal.evidence.empty()) body += "<li>none given</li>";
  return body + "</ul>";
}

std::string renderGate(const Proposal& proposal, const std::optional<GateRecord>& gate) {
  std::string body = "<h2>Gate</h2><div id=\"gate\">";
  if (!gate) {
    body += "<p>Not run yet: approving runs it, or run it now to see its evidence first.</p>";
  } else {
    const json report = json::parse(gate->result, nullptr, false);
    body += std::string("<p id=\"gate-verdict\" class=\"") + (gate->passed ? "pass" : "fail") +
            "\">" + (gate->passed ? "passed" : "failed") + "</p><p>" +
            escapeMarkup(report.is_object() ? firstLine(gateSummary(report)) : gate->result) +
            "</p>";
    if (report.is_object()) {
      if (!report.value("changed_on_main", json::array()).empty()) {
        std::string names;
        for (const json& name : report["changed_on_main"]) {
          names += (names.empty() ? "" : ", ") + name.get<std::string>();
        }
        body += "<p id=\"changed-on-main\">Changed on main since this proposal was made: " +
                escapeMarkup(names) +
                " (approving puts the proposal's version in place of main's).</p>";
      }
      if (!report["problems"].empty()) {
        body += "<ul id=\"gate-problems\">";
        for (const json& problem : report["problems"]) {
          body += "<li class=\"fail\">" + escapeMarkup(problem.get<std::string>()) + "</li>";
        }
        body += "</ul>";
      }
      body +=
          "<table id=\"gate-models\"><tr><th>role</th><th>model</th><th>profile</th>"
          "<th>verdict</th><th>adapters applied (equivalence on fresh draws)</th></tr>";
      std::map<std::string, std::vector<std::string>> also_changes;
      for (const json& entry : report["models"]) {
        std::string applied;
        for (const json& application : entry.value("applied", json::array())) {
          const std::string name = application.value("adapter", "");
          applied += "<div>" + escapeMarkup(name);
          if (application.contains("equivalence")) {
            applied += ": " + escapeMarkup(equivalenceLine(application["equivalence"]));
          }
          applied += "</div>";
          if (entry["role"] == "regression") {
            also_changes[name].push_back(modelName(entry["model"]) + " @ " +
                                         entry["profile"].get<std::string>());
          }
        }
        const std::string verdict = entry.value("verdict", entry.value("status", ""));
        body +=
            "<tr><td>" + escapeMarkup(entry["role"].get<std::string>()) + "</td><td>" +
            escapeMarkup(modelName(entry["model"])) + "</td><td>" +
            escapeMarkup(entry["profile"].get<std::string>()) + "</td><td class=\"" +
            (verdict == "pass" ? "pass" : "fail") + "\">" +
            escapeMarkup(entry.contains("reason") ? entry["reason"].get<std::string>() : verdict) +
            "</td><td>" + applied + "</td></tr>";
      }
      body +=
          "</table><h3>What the adapters change besides the claimed models</h3><ul id=\"matches\">";
      for (const auto& adapter : proposal.adapters) {
        const auto it = also_changes.find(adapter.name);
        body += "<li>" + escapeMarkup(adapter.name) + ": ";
        if (it == also_changes.end()) {
          body += "none of the " + std::to_string(report["regression"].value("checked", 0)) +
                  " known model(s) checked";
        } else {
          std::string models;
          for (const auto& model : it->second) models += (models.empty() ? "" : ", ") + model;
          body += escapeMarkup(models);
        }
        body += "</li>";
      }
      body += "</ul>";
    }
  }
  return body + "</div>";
}

std::string renderActions(const Proposal& proposal) {
  const std::string id = std::to_string(proposal.id);
  const std::string revision = "<input type=\"hidden\" name=\"revision\" value=\"" +
                               std::to_string(proposal.version) + "\">";
  const auto form = [&](const std::string& action, const std::string& label, bool comment,
                        bool required) {
    return "<form class=\"action\" method=\"post\" action=\"/review/" + id + "/" + action + "\">" +
           revision +
           (comment ? "<textarea name=\"comment\" placeholder=\"comment\"" +
                          std::string(required ? " required" : "") + "></textarea><br>"
                    : "") +
           "<button type=\"submit\" id=\"" + action + "\">" + label + "</button></form>";
  };
  std::string body = "<h2>Decide</h2><div id=\"actions\">";
  if (proposal.state == ProposalState::kPending) {
    body += form("approve", "Approve (runs the gate)", true, false) +
            form("request-changes", "Request changes", true, true) +
            form("reject", "Reject", true, true) + form("gate", "Run the gate only", false, false);
  } else if (proposal.state == ProposalState::kChangesRequested) {
    body += form("reject", "Reject", true, true);
  } else {
    body += "<p>Decided: " + stateBadge(stateName(proposal.state)) + "</p>";
  }
  return body + "</div>";
}

std::string renderProposal(const std::string& root, int64_t id, const std::string& banner) {
  RootedContext context(root);
  ProposalStore store = openReviewStore(context);
  const Proposal proposal = store.get(id);
  const auto gate = store.latestGate(id);
  const WorkspaceCatalog catalog = WorkspaceCatalog::open(workspaceCatalogDir(context));
  std::string adapters;
  for (const auto& adapter : proposal.adapters) {
    adapters += (adapters.empty() ? "" : ", ") + adapter.name;
  }
  std::string body = banner + "<h1>Proposal " + std::to_string(id) + ": " + escapeMarkup(adapters) +
                     "</h1><p><span id=\"state\">" + stateBadge(stateName(proposal.state)) +
                     "</span> revision " + std::to_string(proposal.version) + ", by " +
                     escapeMarkup(proposal.author) + " on " + escapeMarkup(proposal.submitted) +
                     ", branch <code>" + escapeMarkup(proposal.branch) + "</code> at <code>" +
                     escapeMarkup(proposal.commit.substr(0, 12)) + "</code>";
  if (proposal.supersedes) {
    const std::string old = std::to_string(*proposal.supersedes);
    body += ", answers <a href=\"/review/" + old + "\">proposal " + old + "</a>";
  }
  if (proposal.superseded_by) {
    const std::string next = std::to_string(*proposal.superseded_by);
    body += ", superseded by <a href=\"/review/" + next + "\">proposal " + next + "</a>";
  }
  body += "</p><h2>Rationale</h2><div id=\"rationale\" class=\"markdown\">" +
          markdownToHtml(proposal.rationale) + "</div><h2>Claims</h2><ul id=\"claims\">";
  for (const auto& claim : proposal.claims) {
    body += "<li>" + escapeMarkup(claim.model) + " on " + escapeMarkup(claim.profile) + "</li>";
  }
  body += "</ul>" + renderEvidence(root, proposal) + "<h2>Diff</h2>" +
          renderDiff(catalog.proposalDiff(proposal.commit)) + renderGate(proposal, gate) +
          renderActions(proposal) + "<h2>History</h2><table id=\"events\">";
  for (const auto& event : proposal.events) {
    body += "<tr><td>" + escapeMarkup(event.time) + "</td><td>" + escapeMarkup(event.actor) +
            "</td><td>" + escapeMarkup(event.action) + "</td><td><pre>" +
            escapeMarkup(event.comment) + "</pre></td></tr>";
  }
  return page("Proposal " + std::to_string(id), body + "</table>");
}

std::string notice(const std::string& code) {
  static const std::map<std::string, std::string> texts = {
      {"approved", "Approved: the proposal is merged into the catalog's main."},
      {"gate-failed", "Not approved: the gate failed (below)."},
      {"gated", "The gate ran (below)."},
      {"changes-requested", "Changes requested: the agent is told."},
      {"rejected", "Rejected."}};
  const auto it = texts.find(code);
  if (it == texts.end()) return "";
  const bool bad = code == "gate-failed";
  return std::string("<p id=\"notice\" class=\"") + (bad ? "error" : "notice") + "\">" +
         it->second + "</p>";
}

std::optional<int64_t> parseId(const std::string& text) {
  if (text.empty() || text.size() > 12 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(text);
}

PageResponse act(const std::string& root, int64_t id, const std::string& action,
                 const PageRequest& request) {
  RootedContext context(root);
  json input = {{"id", id}};
  const auto param = [&](const std::string& name) {
    const auto it = request.params.find(name);
    return it == request.params.end() ? std::string() : it->second;
  };
  if (!param("comment").empty()) input["comment"] = param("comment");
  if (const auto revision = parseId(param("revision"))) input["revision"] = *revision;
  std::string code;
  if (action == "approve") {
    const json result = runOperation(operationNamed("review_approve"), input, context);
    code = result.value("approved", false) ? "approved" : "gate-failed";
  } else if (action == "gate") {
    gateProposal(context, id, GateOptions{});
    code = "gated";
  } else if (action == "request-changes" || action == "reject") {
    if (!input.contains("comment")) input["comment"] = "";
    runOperation(operationNamed(action == "reject" ? "review_reject" : "review_request_changes"),
                 input, context);
    code = action == "reject" ? "rejected" : "changes-requested";
  } else {
    return {404, "text/plain; charset=utf-8", "no action " + action + "\n", ""};
  }
  PageResponse response;
  response.status = 303;
  response.location = "/review/" + std::to_string(id) + "?notice=" + code;
  return response;
}

}  // namespace

bool isReviewPagePath(const std::string& path) {
  return path == "/review" || path.rfind("/review/", 0) == 0;
}

PageResponse handleReviewPage(const std::string& root, const PageRequest& request) {
  std::vector<std::string> parts;
  for (size_t start = 1; start <= request.path.size();) {
    const size_t end = std::min(request.path.find('/', start), request.path.size());
    if (end > start) parts.push_back(request.path.substr(start, end - start));
    start = end + 1;
  }
  const auto error = [](int status, const std::string& message) {
    return PageResponse{status, "text/html; charset=utf-8",
                        page("Error", "<p class=\"error\" id=\"error\">" + escapeMarkup(message) +
                                          "</p><p><a href=\"/review\">Back to the queue</a></p>"),
                        ""};
  };
  try {
    if (parts.size() == 1 && request.method == "GET")
      return {200, "text/html; charset=utf-8", renderQueue(root, request), ""};
    if (parts.size() == 3 && parts[1] == "reports" && request.method == "GET") {
      const std::string file = parts[2];
      const std::string suffix = ".html";
      if (file.size() <= suffix.size() ||
          file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
        return error(404, "reports are served as <id>.html");
      }
      return {200, "text/html; charset=utf-8",
              renderHtmlReport(ReportStore(root).load(file.substr(0, file.size() - suffix.size()))),
              ""};
    }
    const auto id = parts.size() >= 2 ? parseId(parts[1]) : std::nullopt;
    if (!id) return error(404, "no page " + request.path);
    if (parts.size() == 2 && request.method == "GET") {
      const auto code = request.params.find("notice");
      return {200, "text/html; charset=utf-8",
              renderProposal(root, *id, code == request.params.end() ? "" : notice(code->second)),
              ""};
    }
    if (parts.size() == 3 && request.method == "POST") return act(root, *id, parts[2], request);
    return error(405, request.method + " " + request.path + " is not something this page does");
  } catch (const ReviewConflict& e) {
    return error(409, e.what());
  } catch (const UserError& e) {
    return error(400, e.what());
  }
}

}  // namespace stickler
