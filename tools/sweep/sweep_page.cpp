#include "tools/sweep/sweep_page.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "tools/reports/decode_chart.h"
#include "tools/reports/html_page.h"

namespace stickler {
namespace {

using nlohmann::json;

// Beyond the document look: the diff's colours and the chart's lines.
constexpr const char* kStyle = R"(
.broken{color:#c62828}.fixed{color:#2e7d32}
svg .covered{stroke:#5b7aa6;fill:none;stroke-width:2}svg .passing{stroke:#2e7d32;fill:none;stroke-width:2}
svg .axis{stroke:#8a939e}
)";

std::string number(const json& value) {
  return value.is_number() ? value.dump() : std::string("0");
}

std::string percent(int64_t part, int64_t whole) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
  return text;
}

bool works(const json& entry) {
  return entry.value("verdict", "") == "pass" ||
         (entry.value("covered", false) && entry.value("category", "") == "lowered only");
}

std::string header(const json& sweep) {
  const json& summary = sweep["summary"];
  const int64_t models = summary.value("models", int64_t{0});
  return "<h1>Coverage sweep on " + escapeMarkup(sweep.value("profile", "")) +
         "</h1>\n<p class=\"mono\">" + escapeMarkup(sweep.value("id", "")) + ", " +
         escapeMarkup(sweep.value("started", "")) + " to " +
         escapeMarkup(sweep.value("finished", "")) + "</p>\n<p id=\"totals\"><b>" +
         number(summary["models"]) + "</b> models: <b>" + number(summary["covered"]) + "</b> (" +
         percent(summary.value("covered", int64_t{0}), models) +
         ") compile with the adapters they have, <b>" + number(summary["passing"]) + "</b> (" +
         percent(summary.value("passing", int64_t{0}), models) + ") pass end to end. " +
         std::to_string(sweep["catalog"].size()) + " adapters in the catalog.</p>\n";
}

// "2026-12-01T18:09:08Z" -> "12-01 18:09": sweeps of one day apart.
std::string shortTime(const std::string& iso) {
  if (iso.size() < 16) return iso;
  return iso.substr(5, 5) + " " + iso.substr(11, 5);
}

// Models covered and passing across the sweeps, as two lines over the sweeps in order.
std::string chart(const std::vector<SweepPoint>& points) {
  std::string page = "<h2>Coverage over time</h2>\n";
  if (points.empty()) return page + "<p>No sweep in history yet.</p>\n";
  const double width = 760;
  const double height = 220;
  const double left = 50;
  const double top = 10;
  int64_t most = 1;
  for (const SweepPoint& point : points) most = std::max(most, point.models);
  const auto x = [&](size_t i) {
    return left + (points.size() == 1 ? width / 2 : width * i / (points.size() - 1));
  };
  const auto y = [&](int64_t value) { return top + height - height * value / most; };
  const auto line = [&](const char* cls, int64_t SweepPoint::*field) {
    std::string coordinates;
    for (size_t i = 0; i < points.size(); ++i) {
      char pair[64];
      std::snprintf(pair, sizeof pair, "%s%.1f,%.1f", i == 0 ? "" : " ", x(i), y(points[i].*field));
      coordinates += pair;
    }
    std::string marks;
    for (size_t i = 0; i < points.size(); ++i) {
      char mark[160];
      std::snprintf(mark, sizeof mark, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>\n",
                    cls, x(i), y(points[i].*field));
      marks += mark;
    }
    return "<polyline class=\"" + std::string(cls) + "\" points=\"" + coordinates + "\"/>\n" +
           marks;
  };
  char box[128];
  std::snprintf(box, sizeof box,
                "<svg id=\"coverage-chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\">\n",
                left + width + 40, top + height + 40, left + width + 40);
  page +=
      "<p class=\"legend\"><span style=\"color:#5b7aa6\">&#9644; compile with adapters</span>"
      "<span style=\"color:#2e7d32\">&#9644; pass end to end</span></p>\n";
  page += box;
  char axis[256];
  std::snprintf(axis, sizeof axis,
                "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>\n"
                "<text x=\"4\" y=\"%.0f\">%lld</text><text x=\"4\" y=\"%.0f\">0</text>\n",
                left, top + height, left + width, top + height, top + 10,
                static_cast<long long>(most), top + height);
  page += axis;
  page += line("covered", &SweepPoint::covered);
  page += line("passing", &SweepPoint::passing);
  for (size_t i = 0; i < points.size(); ++i) {
    char label[256];
    std::snprintf(label, sizeof label,
                  "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x(i),
                  top + height + 18, escapeMarkup(shortTime(points[i].finished)).c_str());
    page += label;
  }
  page +=
      "</svg>\n<table id=\"history\"><tr><th>sweep</th><th>finished</th><th>models</th>"
      "<th>compile with adapters</th><th>pass</th></tr>\n";
  for (auto point = points.rbegin(); point != points.rend(); ++point) {
    page += "<tr><td class=\"mono\">" + escapeMarkup(point->id) + "</td><td>" +
            escapeMarkup(point->finished) + "</td><td class=\"num\">" +
            std::to_string(point->models) + "</td><td class=\"num\">" +
            std::to_string(point->covered) + "</td><td class=\"num\">" +
            std::to_string(point->passing) + "</td></tr>\n";
  }
  return page + "</table>\n";
}

std::string diffSection(const json& sweep) {
  std::string page = "<h2>Since the previous sweep</h2>\n";
  if (!sweep.contains("diff")) return page + "<p>No previous sweep on this profile.</p>\n";
  const json& diff = sweep["diff"];
  page += "<p>Compared with <span class=\"mono\">" + escapeMarkup(diff.value("previous", "")) +
          "</span>: " + std::to_string(diff["newly_broken"].size()) + " newly broken, " +
          std::to_string(diff["newly_fixed"].size()) + " newly fixed, " +
          std::to_string(diff["changed"].size()) + " changed, " +
          std::to_string(diff["added"].size()) + " added, " +
          std::to_string(diff["removed"].size()) + " removed.</p>\n";
  for (const char* bucket : {"newly_broken", "newly_fixed", "changed"}) {
    if (diff[bucket].empty()) continue;
    std::string title = bucket;
    std::replace(title.begin(), title.end(), '_', ' ');
    page += "<h3>" + title + "</h3>\n<table id=\"" + std::string(bucket) +
            "\"><tr><th>model</th><th>before</th><th>now</th><th>why</th></tr>\n";
    const std::string cls = std::string(bucket) == "newly_broken"  ? " class=\"broken\""
                            : std::string(bucket) == "newly_fixed" ? " class=\"fixed\""
                                                                   : "";
    for (const json& change : diff[bucket]) {
      page += "<tr" + cls + "><td class=\"mono\">" +
              escapeMarkup(change.value("name", change.value("model", ""))) + "</td><td>" +
              escapeMarkup(change.value("before", "")) + "</td><td>" +
              escapeMarkup(change.value("after", "")) + "</td><td>" +
              escapeMarkup(change.value("why", "")) +
              (change.value("archive_changed", false) ? " (the archive changed)" : "") +
              "</td></tr>\n";
    }
    page += "</table>\n";
  }
  return page;
}

std::string familyTable(const json& summary) {
  std::string page =
      "<h2>Families</h2>\n<table id=\"families\"><tr><th>family</th><th>models</th>"
      "<th>compile with adapters</th><th>pass</th></tr>\n";
  for (const auto& [family, counts] : summary["by_family"].items()) {
    page += "<tr><td>" + escapeMarkup(family) + "</td><td class=\"num\">" +
            number(counts["models"]) + "</td><td class=\"num\">" + number(counts["covered"]) +
            "</td><td class=\"num\">" + number(counts["passing"]) + "</td></tr>\n";
  }
  page +=
      "</table>\n<h2>Categories</h2>\n<table id=\"categories\"><tr><th>category</th>"
      "<th>models</th></tr>\n";
  for (const auto& [kind, count] : summary["by_category"].items()) {
    page += "<tr><td>" + escapeMarkup(kind) + "</td><td class=\"num\">" + number(count) +
            "</td></tr>\n";
  }
  return page + "</table>\n";
}

std::string blockerTable(const json& summary) {
  std::string page = "<h2>What blocks the most models</h2>\n";
  if (summary["blockers"].empty()) return page + "<p>No model is blocked.</p>\n";
  page += "<table id=\"blockers\"><tr><th>blocker</th><th>models</th><th>for example</th></tr>\n";
  for (const json& blocker : summary["blockers"]) {
    std::string examples;
    for (const json& name : blocker["examples"]) {
      examples += (examples.empty() ? "" : ", ") + escapeMarkup(name.get<std::string>());
    }
    page += "<tr><td class=\"mono\">" + escapeMarkup(blocker.value("blocker", "")) +
            "</td><td class=\"num\">" + number(blocker["models"]) + "</td><td>" + examples +
            "</td></tr>\n";
  }
  return page + "</table>\n";
}

std::string modelTable(const json& sweep) {
  std::string page =
      "<h2>Every model</h2>\n<table id=\"models\"><tr><th>model</th><th>family</th>"
      "<th>category</th><th>adapters</th><th>detail</th><th>s</th></tr>\n";
  for (const json& entry : sweep["models"]) {
    std::string adapters;
    if (entry.contains("adapters")) {
      for (const json& name : entry["adapters"].value("applied", json::array())) {
        adapters += (adapters.empty() ? "" : " ") + escapeMarkup(name.get<std::string>());
      }
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", entry.value("seconds", 0.0));
    page += std::string("<tr") + (works(entry) ? "" : " class=\"broken\"") +
            "><td class=\"mono\">" + escapeMarkup(entry.value("name", entry.value("model", ""))) +
            "</td><td>" + escapeMarkup(entry.value("family", "")) + "</td><td>" +
            escapeMarkup(entry.value("category", "")) + "</td><td class=\"mono\">" + adapters +
            "</td><td>" + escapeMarkup(entry.value("detail", "")) + "</td><td class=\"num\">" +
            seconds + "</td></tr>\n";
  }
  return page + "</table>\n";
}

// The decoders the sweep decoded: per step, how many pass it and the lowest KV cosine among
// them; then each failing decoder's steps as a chart (at most kCharted, in list order).
std::string decodeSection(const json& sweep) {
  constexpr size_t kCharted = 20;
  std::vector<const json*> decoded;
  for (const json& entry : sweep["models"]) {
    if (entry.contains("decode") && entry["decode"].is_object()) decoded.push_back(&entry);
  }
  if (decoded.empty()) return "";
  size_t passing = 0;
  size_t steps = 0;
  for (const json* entry : decoded) {
    passing += entry->value("verdict", "") == "pass";
    steps = std::max(steps, (*entry)["decode"].value("per_step", json::array()).size());
  }
  std::string page = "<h2>Decoding</h2>\n<p id=\"decode-totals\"><b>" +
                     std::to_string(decoded.size()) +
                     "</b> decoders passed their forward and were decoded (the prefill and " +
                     number(sweep["options"].value("decode", json())) +
                     " greedy steps, the reference's token fed to both sides): <b>" +
                     std::to_string(passing) + "</b> pass every step.</p>\n" +
                     "<table id=\"decode-steps\"><tr><th>step</th><th>decoders that pass it</th>"
                     "<th>lowest KV cosine</th></tr>\n";
  for (size_t step = 0; step < steps; ++step) {
    size_t pass = 0;
    std::optional<double> lowest;
    for (const json* entry : decoded) {
      const json& per_step = (*entry)["decode"].value("per_step", json::array());
      if (step >= per_step.size()) continue;
      pass += per_step[step].value("verdict", "") == "pass";
      const json& cosine = per_step[step].value("min_kv_cosine", json());
      if (cosine.is_number()) lowest = std::min(lowest.value_or(1.0), cosine.get<double>());
    }
    char cosine[32] = "-";
    if (lowest) std::snprintf(cosine, sizeof cosine, "%.6f", *lowest);
    page += "<tr><td>" + (step == 0 ? std::string("prefill") : std::to_string(step)) +
            "</td><td class=\"num\">" + std::to_string(pass) + " of " +
            std::to_string(decoded.size()) + "</td><td class=\"num\">" + cosine + "</td></tr>\n";
  }
  page += "</table>\n";
  size_t charted = 0;
  for (const json* entry : decoded) {
    if (entry->value("verdict", "") == "pass" || charted == kCharted) continue;
    if (charted++ == 0) page += decodeChartLegend();
    const std::string name = entry->value("name", entry->value("model", ""));
    page += "<h3 class=\"mono\">" + escapeMarkup(name) + "</h3>\n<p>" +
            escapeMarkup(entry->value("detail", "")) + "</p>\n" +
            decodeStepChart((*entry)["decode"]["per_step"], "decode-" + std::to_string(charted));
  }
  return page;
}

}  // namespace

std::string renderSweepHtml(const json& sweep, const std::vector<SweepPoint>& points) {
  std::string body = header(sweep);
  body += chart(points);
  body += diffSection(sweep);
  body += familyTable(sweep["summary"]);
  body += blockerTable(sweep["summary"]);
  body += decodeSection(sweep);
  body += modelTable(sweep);
  body += "<footer><p class=\"mono\">stickler.sweep version " + number(sweep["version"]) +
          "; the document is sweep.json beside this page</p></footer>\n";
  return renderHtmlPage({.title = "Stickler sweep " + sweep.value("id", ""),
                         .style = std::string(kDocumentStyle) + kStyle + kDecodeChartStyle,
                         .body = body});
}

std::string renderSweepJunit(const json& sweep) {
  size_t failures = 0;
  std::string cases;
  const std::string classname = escapeMarkup("stickler.sweep." + sweep.value("profile", ""));
  for (const json& entry : sweep["models"]) {
    cases += "    <testcase classname=\"" + classname + "\" name=\"" +
             escapeMarkup(entry.value("name", entry.value("model", ""))) + "\" time=\"" +
             std::to_string(entry.value("seconds", 0.0)) + "\"";
    if (works(entry)) {
      cases += "/>\n";
      continue;
    }
    ++failures;
    cases += ">\n      <failure type=\"" + escapeMarkup(entry.value("category", "")) +
             "\" message=\"" + escapeMarkup(entry.value("detail", "")) + "\">" +
             escapeMarkup(entry.value("model", "")) + "</failure>\n    </testcase>\n";
  }
  const std::string counts = " tests=\"" + std::to_string(sweep["models"].size()) +
                             "\" failures=\"" + std::to_string(failures) + "\"";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"stickler\"" + counts +
         ">\n  <testsuite name=\"" + escapeMarkup("stickler sweep " + sweep.value("id", "")) +
         "\"" + counts + " errors=\"0\" skipped=\"0\">\n" + cases +
         "  </testsuite>\n</testsuites>\n";
}

}  // namespace stickler
