#include "engine/wisdom.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/excerpt.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "codegen/program_proto.h"
#include "engine/job.h"
#include "engine/prepare.h"
#include "engine/records.h"
#include "engine/requests.h"
#include "engine/runs.h"
#include "storage/sha256.h"

namespace meshtune::engine {

absl::StatusOr<storage::Workload> RecordWorkload(const v1::Record& m) {
  v1::Mesh mesh;
  int64_t ranks = m.workload_ranks();
  absl::string_view workload_mesh = m.workload_mesh();
  // workload_ranks, or in a file exported before it existed, workload_mesh "ranks=N".
  if (ranks == 0 && absl::ConsumePrefix(&workload_mesh, "ranks=")) {
    if (!absl::SimpleAtoi(workload_mesh, &ranks)) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload_mesh \"", m.workload_mesh(), "\" is not ranks=N"));
    }
  } else if (ranks == 0) {
    mesh.set_axes(m.workload_mesh());
  }
  MT_ASSIGN_OR_RETURN(storage::Workload w, RequestWorkload(m.problem(), mesh, ranks, m.profile()));
  if (!m.fingerprint().empty() && m.fingerprint() != w.fingerprint) {
    return absl::InvalidArgumentError(
        absl::StrCat("fingerprint ", m.fingerprint(), " is not the workload's (", w.fingerprint,
                     "): the record names another problem than its fingerprint"));
  }
  return w;
}

namespace {

// The timing of a wisdom record as an import reads it: a measured time without timing is
// from a file written before meshtune 0.9, "paced". InvalidArgument for an unknown timing.
absl::StatusOr<storage::Timing> ImportedTiming(const v1::Record& r) {
  MT_ASSIGN_OR_RETURN(storage::Timing timing, storage::ParseTiming(r.timing()));
  if (timing == storage::Timing::kNone && r.has_measured_s()) return storage::Timing::kPaced;
  return timing;
}

// What storage::BetterRecord ranks of a message (its id cleared: wisdom has none).
storage::TuningRecord Ranked(const v1::Record& r) {
  storage::TuningRecord t;
  t.verified = r.verified();
  t.checked = r.checked();
  t.predicted_s = r.predicted_s();
  t.measured_s = r.measured_s();  // 0 when unset, as the message reads
  t.timing = ImportedTiming(r).value_or(storage::Timing::kPaced);
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
         a.created_unix_ms == b.created_unix_ms && a.library == b.library && a.sample == b.sample &&
         a.timing == b.timing;
}

// What is wrong with a line, short: protobuf's parser quotes a bad value whole (a program's
// base64 is kilobytes).
std::string LineError(const absl::Status& s) {
  return base::Excerpt(s.message(), 4 * base::kMaxExcerpt);
}

// One parsed line: its workload and its record, ready for TuningDb::Add.
struct Line {
  storage::Workload workload;
  storage::TuningRecord record;
  std::string description;
};

// A measured run's line ({"run": ...}), as WisdomRunsText writes it.
bool IsRunLine(absl::string_view line) { return absl::StartsWith(line, "{\"run\":"); }

// The key by which an import knows a run it already has.
std::string RunKey(const v1::MeasuredRun& r) {
  return absl::StrCat(r.group(), "\n", r.trace(), "\n", r.mesh(), "\n", r.created_unix_ms(), "\n",
                      r.predicted_s(), "\n", r.measured_s());
}

// Parses a wisdom line into `*message` (the record as in the file, but for its timing: a
// measured time without one is marked "paced", ImportedTiming) and checks it.
absl::StatusOr<Line> ParseLine(absl::string_view text, v1::Record* message) {
  const v1::Record& m = *message;
  MT_RETURN_IF_ERROR(base::FromJson(text, message));
  MT_ASSIGN_OR_RETURN(const storage::Timing timing, ImportedTiming(m));
  message->set_timing(std::string(storage::TimingName(timing)));
  Line line;
  MT_ASSIGN_OR_RETURN(line.workload, RecordWorkload(m));
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
  if (m.has_library()) r.library = m.library().SerializeAsString();
  r.timing = timing;
  if (m.has_sample()) r.sample = m.sample().SerializeAsString();
  line.description =
      absl::StrCat(line.workload.expr, " (", line.workload.extents, ", ", line.workload.dtype,
                   ") on ", line.workload.MeshText(), ", profile ", line.workload.profile);
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
  std::vector<v1::MeasuredRun> runs;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    const absl::string_view stripped = absl::StripAsciiWhitespace(raw);
    if (stripped.empty() || absl::StartsWith(stripped, "#")) continue;
    if (IsRunLine(stripped)) {
      v1::WisdomRunLine run;
      if (absl::Status s = base::FromJson(stripped, &run); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "wisdom line ", number, ": not a measured run (meshtune.v1.WisdomRunLine): ",
            base::Excerpt(std::string(s.message()))));
      }
      runs.push_back(run.run());
      MarkPacedRun(&runs.back());
      continue;
    }
    v1::Record message;
    absl::StatusOr<Line> line = ParseLine(stripped, &message);
    if (!line.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("wisdom line ", number, ": ", LineError(line.status())));
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
  if (!runs.empty()) {
    MT_ASSIGN_OR_RETURN(const std::vector<v1::MeasuredRun> have,
                        ListMeasuredRuns(db, std::nullopt));
    std::set<std::string> keys;
    for (const v1::MeasuredRun& r : have) keys.insert(RunKey(r));
    std::vector<v1::MeasuredRun> fresh;
    for (const v1::MeasuredRun& r : runs) {
      if (keys.insert(RunKey(r)).second) {
        fresh.push_back(r);
      } else {
        ++report.runs_present;
      }
    }
    MT_RETURN_IF_ERROR(KeepRuns(db, fresh));
    report.runs_added = static_cast<int64_t>(fresh.size());
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

std::string WisdomRunsText(const std::vector<v1::MeasuredRun>& runs) {
  std::string out;
  for (const v1::MeasuredRun& r : runs) {
    v1::WisdomRunLine line;
    *line.mutable_run() = r;
    line.mutable_run()->clear_id();
    absl::StrAppend(&out, base::ToJsonLine(line), "\n");
  }
  return out;
}

absl::StatusOr<std::string> ReadWisdomFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read wisdom file ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<ImportReport> ImportWisdomFile(storage::TuningDb& db, const std::string& path) {
  absl::StatusOr<std::string> text = ReadWisdomFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<ImportReport> imported = ImportWisdom(db, *text);
  if (!imported.ok()) {
    return absl::Status(imported.status().code(),
                        absl::StrCat(path, ": ", imported.status().message()));
  }
  return imported;
}

absl::StatusOr<v1::LookupResponse> LookupInWisdomFile(const std::string& path,
                                                      const v1::LookupRequest& request) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  if (absl::StatusOr<ImportReport> imported = ImportWisdomFile(*db, path); !imported.ok())
    return imported.status();
  absl::StatusOr<v1::LookupResponse> found = Lookup(*db, request);
  if (found.ok() || found.status().code() != absl::StatusCode::kNotFound) return found;
  return absl::NotFoundError(absl::StrCat(
      absl::StripSuffix(found.status().message(), "; tune it first"), " in wisdom file ", path));
}

}  // namespace meshtune::engine

namespace meshtune::engine {

absl::StatusOr<std::string> ProgramDigest(const storage::Workload& w, const v1::Record& r) {
  return storage::Sha256Hex(
      absl::StrCat("meshtune wisdom program\nversion: ", storage::kTunerVersion,
                   "\nproved by translation validation (codegen::LowerValidated)\n", w.canonical,
                   "\nrecord mesh: ", r.mesh(), "\ntrace (", r.trace().text().size(), " bytes):\n",
                   r.trace().text(), "\nprogram (", r.program().size(), " bytes):\n", r.program()));
}

absl::Status AddProgram(v1::Record* r) {
  r->clear_program();
  r->clear_program_digest();
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram statements, ProgramOf(r->problem()));
  if (!statements.single()) return absl::OkStatus();  // a program goes out as its traces
  MT_ASSIGN_OR_RETURN(storage::Workload w, RecordWorkload(*r));
  const v1::Mesh mesh = RecordMesh(*r);
  // LowerTrace validates: a program whose validation fails or cannot decide is not written,
  // and the digest says the one written was proved.
  MT_ASSIGN_OR_RETURN(codegen::Program program, LowerTrace(r->problem(), mesh, r->trace()));
  // v1::Program has no map field: its bytes are the same on every run.
  std::string bytes = codegen::ToProto(program).SerializeAsString();
  r->set_program(std::move(bytes));
  MT_ASSIGN_OR_RETURN(std::string digest, ProgramDigest(w, *r));
  r->set_program_digest(std::move(digest));
  return absl::OkStatus();
}

namespace {

// True when `line` names, as `records export` writes it, a fingerprint other than `fp` (64
// lowercase hex digits; a JSON string cannot hold the quoted key, so the match is the field).
bool NamesOtherFingerprint(absl::string_view line, const std::string& fp) {
  if (IsRunLine(line)) return true;  // a measured run: no record of any workload
  constexpr absl::string_view kKey = "\"fingerprint\":\"";
  const size_t at = line.find(kKey);
  if (at == absl::string_view::npos) return false;
  const absl::string_view value = line.substr(at + kKey.size(), fp.size() + 1);
  if (value.size() != fp.size() + 1 || value.back() != '"') return false;
  const absl::string_view hex = value.substr(0, fp.size());
  return std::all_of(hex.begin(), hex.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }) &&
         hex != fp;
}

}  // namespace

absl::StatusOr<WisdomRecord> LookupWisdom(const std::string& text,
                                          const v1::LookupRequest& request) {
  WisdomRecord out;
  MT_ASSIGN_OR_RETURN(out.workload, RequestWorkload(request.problem(), request.mesh(),
                                                    request.ranks(), request.profile()));
  const std::string& fp = out.workload.fingerprint;
  std::optional<Line> best;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    const absl::string_view stripped = absl::StripAsciiWhitespace(raw);
    if (stripped.empty() || absl::StartsWith(stripped, "#")) continue;
    if (NamesOtherFingerprint(stripped, fp)) continue;
    v1::Record message;
    absl::StatusOr<Line> line = ParseLine(stripped, &message);
    if (!line.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("wisdom line ", number, ": ", LineError(line.status())));
    }
    if (line->workload.fingerprint != fp) continue;
    line->record.id = number;  // the database's order: the earlier line first among equals
    if (best.has_value() && !storage::BetterRecord(line->record, best->record)) continue;
    best = *std::move(line);
    out.record = std::move(message);
    out.line = number;
  }
  if (!best.has_value()) {
    const v1::Problem& p = request.problem();
    return absl::NotFoundError(
        absl::StrCat("no tuning record for ", base::Excerpt(p.expr(), 2 * base::kMaxExcerpt), " (",
                     base::Excerpt(p.extents(), 2 * base::kMaxExcerpt), ", ",
                     p.dtype().empty() ? "f32" : base::Excerpt(p.dtype()), ") on ",
                     out.workload.MeshText(), " with profile ", out.workload.profile));
  }
  MT_ASSIGN_OR_RETURN(out.trace, storage::FromCanonicalTrace(out.workload, best->record.trace));
  if (out.record.has_program() && out.record.has_program_digest()) {
    MT_ASSIGN_OR_RETURN(std::string digest, ProgramDigest(best->workload, out.record));
    out.program_trusted = digest == out.record.program_digest();
  }
  return out;
}

}  // namespace meshtune::engine
