#include "cli/wisdom_cmds.h"

#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "engine/exit_codes.h"
#include "engine/records.h"
#include "engine/runs.h"
#include "engine/wisdom.h"
#include "ir/statement_program.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {
namespace {

constexpr size_t kMaxWisdomBytes = size_t{1} << 30;

// "verified, measured 0.0931 s" or "not measured, predicted 0.1 s".
std::string Times(const v1::Record& r) {
  if (r.verified()) return absl::StrFormat("verified, measured %.4g s", r.measured_s());
  return absl::StrFormat("not measured, predicted %.4g s", r.predicted_s());
}

}  // namespace

int RunExport(const RecordWorkloadFlags& filter, engine::Backend& backend,
              const std::string& runs_db, std::ostream& out, std::ostream& err) {
  std::string fingerprint;
  if (!filter.problem.expr.empty() || !filter.problem.extents.empty()) {
    v1::Problem problem;
    problem.set_expr(filter.problem.expr);
    problem.set_extents(filter.problem.extents);
    problem.set_dtype(filter.problem.dtype);
    v1::Mesh mesh;
    mesh.set_axes(filter.mesh.mesh);
    absl::StatusOr<storage::Workload> w =
        engine::RequestWorkload(problem, mesh, filter.mesh.ranks, filter.profile);
    if (!w.ok()) return Fail(w.status(), err);
    fingerprint = w->fingerprint;
  }
  std::vector<v1::Record> records;
  v1::ListRecordsRequest request;
  request.set_page_size(storage::kMaxListLimit);
  do {
    absl::StatusOr<v1::ListRecordsResponse> page = backend.ListRecords(request);
    if (!page.ok()) return Fail(page.status(), err);
    for (const v1::Record& r : page->records()) {
      if (fingerprint.empty() || r.fingerprint() == fingerprint) records.push_back(r);
    }
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  // Each record carries its lowered program (engine/wisdom.h): a plan made from the file
  // needs no isl. A record that does not lower here goes out without one; a program of
  // several statements goes out as its traces (engine::AddProgram).
  for (v1::Record& r : records) {
    const absl::Status lowered = engine::AddProgram(&r);
    if (!lowered.ok()) {
      err << "meshtune: warning: a record of " << r.problem().expr() << " ("
          << r.problem().extents() << ") on " << r.mesh()
          << " is exported without its program: " << lowered.message() << "\n";
    }
  }
  out << engine::WisdomText(std::move(records));
  if (!fingerprint.empty() || runs_db.empty()) return engine::kExitOk;
  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db =
      storage::OpenSqliteTuningDbReadOnly(runs_db);
  if (absl::IsNotFound(db.status())) return engine::kExitOk;  // nothing tuned: no runs either
  if (!db.ok()) return Fail(db.status(), err);
  absl::StatusOr<std::vector<v1::MeasuredRun>> runs = engine::ListMeasuredRuns(**db, std::nullopt);
  if (!runs.ok()) return Fail(runs.status(), err);
  out << engine::WisdomRunsText(*runs);
  return engine::kExitOk;
}

int RunListRuns(const std::string& db_path, const std::string& profile, bool json,
                std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db =
      storage::OpenSqliteTuningDbReadOnly(db_path);
  if (absl::IsNotFound(db.status())) return engine::kExitOk;  // nothing tuned: no runs
  if (!db.ok()) return Fail(db.status(), err);
  std::optional<std::string> which;
  if (!profile.empty()) which = profile == "builtin" ? "" : profile;
  absl::StatusOr<std::vector<v1::MeasuredRun>> runs = engine::ListMeasuredRuns(**db, which);
  if (!runs.ok()) return Fail(runs.status(), err);
  if (!json && !runs->empty()) {
    out << absl::StrFormat("%6s  %-8s  %-10s  %-10s  %11s  %11s  %7s  %s\n", "id", "source",
                           "profile", "mesh", "predicted_s", "measured_s", "error", "problem");
  }
  for (const v1::MeasuredRun& r : *runs) {
    if (json) {
      out << base::ToJsonLine(r) << "\n";
      continue;
    }
    const bool timed = r.verified() && r.has_measured_s() && r.measured_s() > 0;
    out << absl::StrFormat(
        "%6d  %-8s  %-10s  %-10s  %11.4g  %11s  %7s  %s\n", r.id(), r.source(),
        r.profile().empty() ? "builtin" : r.profile(), r.mesh(), r.predicted_s(),
        timed ? absl::StrFormat("%.4g", r.measured_s()) : std::string("failed"),
        timed
            ? absl::StrFormat("%+.1f%%", 100 * (r.measured_s() - r.predicted_s()) / r.measured_s())
            : std::string("-"),
        r.problem());
  }
  return engine::kExitOk;
}

int RunImport(const std::string& path, const std::string& db_path, std::ostream& out,
              std::ostream& err) {
  absl::StatusOr<std::string> text = ReadInput(path, kMaxWisdomBytes, "wisdom file");
  if (!text.ok()) return Fail(text.status(), err);
  if (text->size() > kMaxWisdomBytes) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("wisdom file ", path, " is larger than 1 GiB")),
        err);
  }
  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db = storage::OpenSqliteTuningDb(db_path);
  if (!db.ok()) return Fail(db.status(), err);
  absl::StatusOr<engine::ImportReport> report = engine::ImportWisdom(**db, *text);
  if (!report.ok()) return Fail(report.status(), err);
  out << "imported " << report->added << (report->added == 1 ? " record" : " records") << " ("
      << report->duplicates << " already present) into " << db_path << "\n";
  if (report->runs_added + report->runs_present > 0) {
    out << "imported " << report->runs_added << " measured runs (" << report->runs_present
        << " already present)\n";
  }
  for (const engine::ImportedWorkload& w : report->workloads) {
    out << "  " << w.description << ": " << w.added << " added, " << w.duplicates
        << " present; best: record " << w.best.id() << (w.best_imported ? " from the file" : "")
        << ", " << Times(w.best) << "\n";
  }
  return engine::kExitOk;
}

}  // namespace meshtune::cli
