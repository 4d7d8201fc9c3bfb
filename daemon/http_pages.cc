#include "daemon/http_pages.h"

#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "engine/records.h"
#include "engine/report/html_page.h"
#include "engine/report/report_html.h"

namespace meshtune::daemon {

namespace {

using engine::HtmlEscape;

constexpr int kPageSize = 50;

constexpr char kNav[] =
    "<nav id=\"nav\"><a href=\"/\">meshtuned</a><a href=\"/records\">records</a>"
    "<a href=\"/tunes\">tunes in progress</a></nav>\n";

HttpPage Page(int status, const std::string& title, const std::string& body) {
  return {status, engine::HtmlDocument(title, absl::StrCat(kNav, "<h1 id=\"title\">",
                                                           HtmlEscape(title), "</h1>\n", body))};
}

std::string Time(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string Optional(bool has, double v) {
  return has ? absl::StrFormat("%.6g", v) : std::string("-");
}

std::string RecordRow(const v1::Record& r) {
  std::string measured = "-";
  if (r.has_measured_s()) {
    measured = absl::StrFormat("%.6g%s", r.measured_s(), r.verified() ? " (verified)" : "");
    if (r.timing() == "paced") {
      absl::StrAppend(&measured, " paced: not a measurement");
    } else if (r.sample().n() > 0) {
      absl::StrAppend(&measured, absl::StrFormat(" n %d, 95%% CI %.4g-%.4g", r.sample().n(),
                                                 r.sample().ci_low_s(), r.sample().ci_high_s()));
    }
  }
  return absl::StrFormat(
      "<tr class=\"record\"><td class=\"num\"><a href=\"/records/%d\">%d</a></td><td>%s</td>"
      "<td><code>%s</code> (%s, %s)</td><td>%s</td><td>%s</td><td>%s</td><td "
      "class=\"num\">%.6g</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
      r.id(), r.id(), HtmlEscape(Time(r.created_unix_ms())), HtmlEscape(r.problem().expr()),
      HtmlEscape(r.problem().extents()), HtmlEscape(r.problem().dtype()),
      HtmlEscape(r.workload_mesh()), HtmlEscape(r.mesh()), HtmlEscape(r.profile()), r.predicted_s(),
      HtmlEscape(measured), HtmlEscape(r.checked().empty() ? "-" : r.checked()));
}

std::string TuneRow(const TuneJob::Snapshot& t) {
  const v1::TuneProgress& p = t.progress;
  return absl::StrFormat(
      "<tr class=\"tune\"><td>%s</td><td>%s</td><td class=\"num\">%d</td><td "
      "class=\"num\">%d%s</td><td class=\"num\">%d</td><td class=\"num\">%d of %d</td><td "
      "class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%.1f</td><td "
      "class=\"num\">%d</td></tr>\n",
      HtmlEscape(t.description), HtmlEscape(p.stage()), p.enumerated(), p.legal(),
      p.legal_estimated() ? " (estimated)" : "", p.costed(), p.measured(), p.to_measure(),
      Optional(p.has_best_predicted_s(), p.best_predicted_s()),
      Optional(p.has_best_measured_s(), p.best_measured_s()), p.elapsed_s(), t.callers);
}

}  // namespace

HttpPages::HttpPages(storage::TuningDb* db, std::string db_path,
                     std::function<std::vector<TuneJob::Snapshot>()> tunes)
    : db_(db), db_path_(std::move(db_path)), tunes_(std::move(tunes)) {}

HttpPage HttpPages::Get(const std::string& path,
                        const std::map<std::string, std::string>& query) const {
  if (path == "/") return Index();
  if (path == "/records" || path == "/records/") return Records(query);
  if (path == "/tunes" || path == "/tunes/") return Tunes();
  const std::string prefix = "/records/";
  if (path.rfind(prefix, 0) == 0) return Record(path.substr(prefix.size()));
  return NotFoundPage(path, "meshtuned serves /, /records, /records/ID and /tunes.");
}

HttpPage HttpPages::Index() const {
  return Page(200, "meshtuned",
              absl::StrCat("<ul id=\"links\">\n<li><a href=\"/records\">records</a>: every "
                           "tuning record, with a report each</li>\n<li><a "
                           "href=\"/tunes\">tunes in progress</a>: ",
                           tunes_().size(),
                           " running or queued now</li>\n</ul>\n<p>Tuning database: <code>",
                           HtmlEscape(db_path_), "</code></p>\n"));
}

HttpPage HttpPages::Records(const std::map<std::string, std::string>& query) const {
  v1::ListRecordsRequest request;
  request.set_page_size(kPageSize);
  if (auto it = query.find("after"); it != query.end() && !it->second.empty()) {
    int64_t after = 0;
    if (!absl::SimpleAtoi(it->second, &after) || after < 0) {
      return Page(
          400, "Bad request",
          absl::StrCat("<p id=\"error\">after=", HtmlEscape(it->second),
                       " is not a record id; give a number, e.g. /records?after=50.</p>\n"));
    }
    request.set_page_token(absl::StrCat(after));
  }
  absl::StatusOr<v1::ListRecordsResponse> page = engine::ListRecords(*db_, request);
  if (!page.ok()) {
    return Page(500, "Records unavailable",
                absl::StrCat("<p id=\"error\">", HtmlEscape(std::string(page.status().message())),
                             "</p>\n"));
  }
  std::string body;
  if (page->records().empty()) {
    body = "<p id=\"no-records\">No records here yet: tune something first.</p>\n";
  } else {
    body =
        "<p>Problems in canonical names (T0, i0, ...). Each id links to the record's tuning "
        "report.</p>\n<table id=\"records\">\n<tr><th>id</th><th>created (UTC)</th>"
        "<th>problem</th><th>tuned for</th><th>mesh</th><th>profile</th><th>predicted s</th>"
        "<th>measured s</th><th>checked</th></tr>\n";
    for (const v1::Record& r : page->records()) absl::StrAppend(&body, RecordRow(r));
    absl::StrAppend(&body, "</table>\n");
  }
  if (!page->next_page_token().empty()) {
    absl::StrAppend(&body,
                    "<p><a id=\"next\" href=\"/records?after=", HtmlEscape(page->next_page_token()),
                    "\">next page</a></p>\n");
  }
  return Page(200, "Tuning records", body);
}

HttpPage HttpPages::Record(const std::string& id_text) const {
  const std::string path = absl::StrCat("/records/", id_text);
  int64_t id = 0;
  if (!absl::SimpleAtoi(id_text, &id) || id < 1) {
    return NotFoundPage(path, "A record is addressed by its id, e.g. /records/1.");
  }
  absl::StatusOr<std::string> html = engine::RecordReportHtml(*db_, id, kNav);
  if (absl::IsNotFound(html.status())) {
    return NotFoundPage(path, absl::StrCat(html.status().message(), "."));
  }
  if (!html.ok()) {
    return Page(500, "Report unavailable",
                absl::StrCat("<p id=\"error\">", HtmlEscape(std::string(html.status().message())),
                             "</p>\n"));
  }
  return {200, *std::move(html)};
}

HttpPage HttpPages::Tunes() const {
  const std::vector<TuneJob::Snapshot> tunes = tunes_();
  if (tunes.empty()) {
    return Page(200, "Tunes in progress",
                "<p id=\"no-tunes\">No tune is running or queued. Reload to see new ones.</p>\n");
  }
  std::string body =
      "<p>Running and queued tunes, oldest first, as of this page's loading (reload to "
      "update).</p>\n<table id=\"tunes\">\n<tr><th>tune</th><th>stage</th><th>candidates</th>"
      "<th>legal</th><th>costed</th><th>measured</th><th>best predicted s</th><th>best "
      "measured s</th><th>elapsed s</th><th>callers</th></tr>\n";
  for (const TuneJob::Snapshot& t : tunes) absl::StrAppend(&body, TuneRow(t));
  return Page(200, "Tunes in progress", absl::StrCat(body, "</table>\n"));
}

HttpPage NotFoundPage(const std::string& path, const std::string& why) {
  return Page(404, "Not found",
              absl::StrCat("<p id=\"error\">Nothing at <code>", HtmlEscape(path), "</code>. ",
                           HtmlEscape(why), "</p>\n"));
}

HttpPage MethodNotAllowedPage(const std::string& method) {
  return Page(405, "Method not allowed",
              absl::StrCat("<p id=\"error\">", HtmlEscape(method),
                           " is not allowed: meshtuned's pages are read-only (GET).</p>\n"));
}

}  // namespace meshtune::daemon
