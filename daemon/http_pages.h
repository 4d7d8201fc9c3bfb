// meshtuned's read-only HTML pages (served with --http): what a browser gets for a path,
// independent of the HTTP server that carries it (daemon/http_server.h).
//
//   /                 index: links to the pages below, the database path
//   /records          the records, 50 a page by id (?after=ID pages on)
//   /records/ID       the tuning report of record ID (engine/report/report_html.h)
//   /tunes            the tunes running or queued, with their progress numbers
//
// Anything else, and an unknown record, is 404 with a page that says what was asked and
// where to go. Every text is HTML-escaped; the pages load nothing from a network and run no
// scripts. Thread-safe when the database is.
#ifndef MESHTUNE_DAEMON_HTTP_PAGES_H_
#define MESHTUNE_DAEMON_HTTP_PAGES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/tune_jobs.h"
#include "storage/tuning_db.h"

namespace meshtune::daemon {

// One answer: the HTTP status and an HTML body.
struct HttpPage {
  int status = 200;
  std::string html;
};

class HttpPages {
 public:
  // Pages over `db` (which must outlive this) and the tunes `tunes` lists when called;
  // `db_path` is shown on the index.
  HttpPages(storage::TuningDb* db, std::string db_path,
            std::function<std::vector<TuneJob::Snapshot>()> tunes);

  // The page at `path` with the query parameters `query` (decoded).
  HttpPage Get(const std::string& path, const std::map<std::string, std::string>& query) const;

 private:
  HttpPage Index() const;
  HttpPage Records(const std::map<std::string, std::string>& query) const;
  HttpPage Record(const std::string& id) const;
  HttpPage Tunes() const;

  storage::TuningDb* const db_;
  const std::string db_path_;
  const std::function<std::vector<TuneJob::Snapshot>()> tunes_;
};

// The 404 page for `path`, with `why`.
HttpPage NotFoundPage(const std::string& path, const std::string& why);

// The 405 page for a request of `method`: the pages are read-only, GET (and HEAD) only.
HttpPage MethodNotAllowedPage(const std::string& method);

}  // namespace meshtune::daemon

#endif  // MESHTUNE_DAEMON_HTTP_PAGES_H_
