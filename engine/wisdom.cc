#include "engine/wisdom.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "engine/records.h"

namespace meshtune::engine {
namespace {

// What storage::BetterRecord ranks of a message (its id cleared: wisdom has none).
storage::TuningRecord Ranked(const v1::Record& r) {
  storage::TuningRecord t;
  t.verified = r.verified();
  t.checked = r.checked();
  t.predicted_s = r.predicted_s();
  t.measured_s = r.measured_s();  // 0 when unset, as the message reads
  return t;
}

// By workload, then the database's ranking (storage::BetterRecord), then fields that make
// the order total.
bool WisdomOrder(const v1::Record& a, const v1::Record& b) {
  if (a.fingerprint() != b.fingerprint()) return a.fingerprint() < b.fingerprint();
  const storage::TuningRecord ra = Ranked(a), rb = Ranked(b);
  if (storage::BetterRecord(ra, rb)) return true;
  if (storage::BetterRecord(rb, ra)) return false;
  return std::make_tuple(a.trace().text(), a.mesh(), a.created_unix_ms(), a.machine()) <
         std::make_tuple(b.trace().text(), b.mesh(), b.created_unix_ms(), b.machine());
}

// The same record, as far as a wisdom file can tell (ids differ between databases).
bool SameRecord(const storage::TuningRecord& a, const storage::TuningRecord& b) {
  return a.trace == b.trace && a.mesh == b.mesh && a.predicted_s == b.predicted_s &&
         a.measured_s == b.measured_s && a.verified == b.verified && a.checked == b.checked &&
         a.checked_extents == b.checked_extents && a.machine == b.machine &&
         a.created_unix_ms == b.created_unix_ms;
}

// One parsed line: its workload and its record, ready for TuningDb::Add.
struct Line {
  storage::Workload workload;
  storage::TuningRecord record;
  std::string description;
};

absl::StatusOr<Line> ParseLine(absl::string_view text) {
  v1::Record m;
  MT_RETURN_IF_ERROR(base::FromJson(text, &m));
  v1::Mesh mesh;
  int64_t ranks = 0;
  absl::string_view workload_mesh = m.workload_mesh();
  if (absl::ConsumePrefix(&workload_mesh, "ranks=")) {
    if (!absl::SimpleAtoi(workload_mesh, &ranks)) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload_mesh \"", m.workload_mesh(), "\" is not ranks=N"));
    }
  } else {
    mesh.set_axes(m.workload_mesh());
  }
  Line line;
  MT_ASSIGN_OR_RETURN(line.workload, RequestWorkload(m.problem(), mesh, ranks, m.profile()));
  if (!m.fingerprint().empty() && m.fingerprint() != line.workload.fingerprint) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fingerprint ", m.fingerprint(), " is not the workload's (", line.workload.fingerprint,
        "): the record names another problem than its fingerprint"));
  }
  storage::TuningRecord& r = line.record;
  MT_ASSIGN_OR_RETURN(r.trace, storage::ToCanonicalTrace(line.workload, m.trace().text()));
  r.mesh = m.mesh();
  r.predicted_s = m.predicted_s();
  if (m.has_measured_s()) r.measured_s = m.measured_s();
  r.verified = m.verified();
  r.patterns.assign(m.patterns().begin(), m.patterns().end());
  r.tuner_version = m.tuner_version();
  r.checked = m.checked();
  r.checked_extents = m.checked_extents();
  r.machine = m.machine();
  r.created_unix_ms = m.created_unix_ms();
  line.description =
      absl::StrCat(line.workload.expr, " (", line.workload.extents, ", ", line.workload.dtype,
                   ") on ", line.workload.mesh, ", profile ", line.workload.profile);
  // What Add would refuse, refused before anything is added.
  storage::TuningRecord checked = r;
  MT_RETURN_IF_ERROR(storage::CheckRecord(line.workload, &checked));
  return line;
}

}  // namespace

std::string WisdomText(std::vector<v1::Record> records) {
  for (v1::Record& r : records) r.clear_id();
  std::sort(records.begin(), records.end(), WisdomOrder);
  std::string out;
  for (const v1::Record& r : records) absl::StrAppend(&out, base::ToJsonLine(r), "\n");
  return out;
}

absl::StatusOr<ImportReport> ImportWisdom(storage::TuningDb& db, const std::string& text) {
  std::vector<Line> lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    const absl::string_view stripped = absl::StripAsciiWhitespace(raw);
    if (stripped.empty() || absl::StartsWith(stripped, "#")) continue;
    absl::StatusOr<Line> line = ParseLine(stripped);
    if (!line.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("wisdom line ", number, ": ", line.status().message()));
    }
    lines.push_back(*std::move(line));
  }
  ImportReport report;
  std::map<std::string, size_t> index;  // fingerprint -> report.workloads
  std::map<std::string, std::vector<storage::TuningRecord>> existing;
  std::map<int64_t, bool> from_file;  // record id -> added by this import
  for (Line& line : lines) {
    const std::string& fp = line.workload.fingerprint;
    if (!index.count(fp)) {
      index[fp] = report.workloads.size();
      report.workloads.push_back({fp, line.description});
      MT_ASSIGN_OR_RETURN(existing[fp], storage::ListAllRecords(db, fp));
    }
    ImportedWorkload& w = report.workloads[index[fp]];
    std::vector<storage::TuningRecord>& have = existing[fp];
    if (std::any_of(have.begin(), have.end(),
                    [&](const storage::TuningRecord& r) { return SameRecord(r, line.record); })) {
      ++w.duplicates;
      ++report.duplicates;
      continue;
    }
    MT_ASSIGN_OR_RETURN(int64_t id, db.Add(line.workload, line.record));
    line.record.id = id;
    from_file[id] = true;
    have.push_back(line.record);
    ++w.added;
    ++report.added;
  }
  for (ImportedWorkload& w : report.workloads) {
    MT_ASSIGN_OR_RETURN(std::optional<storage::TuningRecord> best, db.Best(w.fingerprint));
    if (!best.has_value()) continue;
    v1::GetRecordRequest get;
    get.set_id(best->id);
    MT_ASSIGN_OR_RETURN(w.best, GetRecord(db, get));
    w.best_imported = from_file.count(best->id) > 0;
  }
  return report;
}

absl::StatusOr<v1::LookupResponse> LookupInWisdomFile(const std::string& path,
                                                      const v1::LookupRequest& request) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read wisdom file ", path));
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  absl::StatusOr<ImportReport> imported = ImportWisdom(*db, text.str());
  if (!imported.ok()) {
    return absl::Status(imported.status().code(),
                        absl::StrCat(path, ": ", imported.status().message()));
  }
  absl::StatusOr<v1::LookupResponse> found = Lookup(*db, request);
  if (found.ok() || found.status().code() != absl::StatusCode::kNotFound) return found;
  return absl::NotFoundError(absl::StrCat(
      absl::StripSuffix(found.status().message(), "; tune it first"), " in wisdom file ", path));
}

}  // namespace meshtune::engine
