#include "engine/records.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/pipeline.h"
#include "codegen/program.h"
#include "engine/job.h"
#include "engine/nearest.h"
#include "engine/requests.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/program_footprint.h"
#include "ir/statement_program.h"
#include "ir/trace.h"
#include "ir/verdict.h"

namespace meshtune::engine {

namespace {

constexpr int kDefaultPageSize = 50;

std::string ProfileOrDefault(const std::string& profile) {
  return profile.empty() ? "default" : profile;
}

// The fields of a workload's canonical text ("key: value" lines).
struct CanonicalFields {
  std::string expr, extents, dtype, mesh, profile, layouts;
};

// The TENSOR=SPEC entries of a workload's layouts, "T0=cyclic(2,2),T3=root": split at the
// commas outside a spec's parentheses.
std::vector<std::string> LayoutList(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    out.back() += c;
  }
  return out;
}

CanonicalFields ParseCanonical(const std::string& canonical) {
  CanonicalFields f;
  for (absl::string_view line : absl::StrSplit(canonical, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(": ", 1));
    if (kv.first == "expr") f.expr = std::string(kv.second);
    if (kv.first == "extents") f.extents = std::string(kv.second);
    if (kv.first == "dtype") f.dtype = std::string(kv.second);
    if (kv.first == "mesh") f.mesh = std::string(kv.second);
    if (kv.first == "profile") f.profile = std::string(kv.second);
    if (kv.first == "layouts") f.layouts = std::string(kv.second);
  }
  return f;
}

// How a problem reads in messages: "C[m,n] += A[m,k] * B[k,n] (k=64,m=64,n=64, f32)".
std::string Describe(const v1::Problem& p) {
  return absl::StrCat(base::Excerpt(p.expr(), 2 * base::kMaxExcerpt), " (",
                      base::Excerpt(p.extents(), 2 * base::kMaxExcerpt), ", ",
                      p.dtype().empty() ? "f32" : base::Excerpt(p.dtype()), ")");
}

// The renames from the requester's names of `w` to canonical ones (`to_canonical`) or back.
std::map<std::string, std::string> Renames(const storage::Workload& w, bool to_canonical) {
  std::map<std::string, std::string> names;
  for (size_t j = 0; j < w.index_names.size(); ++j) {
    const std::string canonical = absl::StrCat("i", j);
    to_canonical ? names[w.index_names[j]] = canonical : names[canonical] = w.index_names[j];
  }
  for (size_t j = 0; j < w.tensor_names.size(); ++j) {
    const std::string canonical = absl::StrCat("T", j);
    to_canonical ? names[w.tensor_names[j]] = canonical : names[canonical] = w.tensor_names[j];
  }
  return names;
}

// A transfer's pattern label (codegen::PatternLabel) with its tensor and loop renamed as
// the trace is (whole names in `names`; a loop the trace created, like "ko", keeps its
// name).
std::string RenamePattern(const std::string& pattern,
                          const std::map<std::string, std::string>& names) {
  return codegen::RenamePatternLabel(pattern, [&](const std::string& name) {
    const auto it = names.find(name);
    return it == names.end() ? name : it->second;
  });
}

// `r` as a message: in the names of `problem` (whose workload is `w`), or in canonical names
// when `w` is null.
absl::StatusOr<v1::Record> ToMessage(const storage::TuningRecord& r, const storage::Workload* w,
                                     const v1::Problem* problem) {
  v1::Record out;
  out.set_id(r.id);
  out.set_fingerprint(r.fingerprint);
  const CanonicalFields canonical = ParseCanonical(r.canonical_workload);
  if (w != nullptr) {
    absl::StatusOr<std::string> trace = storage::FromCanonicalTrace(*w, r.trace);
    if (!trace.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("record ", r.id, " cannot be written in the names of ", Describe(*problem),
                       ": ", trace.status().message()));
    }
    out.mutable_trace()->set_text(*trace);
    *out.mutable_problem() = *problem;
    if (out.problem().dtype().empty()) out.mutable_problem()->set_dtype("f32");
  } else {
    out.mutable_trace()->set_text(r.trace);
    out.mutable_problem()->set_expr(canonical.expr);
    out.mutable_problem()->set_extents(canonical.extents);
    out.mutable_problem()->set_dtype(canonical.dtype);
    if (!canonical.layouts.empty()) {  // written by MakeWorkload: always TENSOR=SPEC
      absl::Status set = SetLayoutFlags(LayoutList(canonical.layouts), out.mutable_problem());
      if (!set.ok()) return set;
    }
  }
  // The database's texts, read here once: the record's mesh, and the workload's ("ranks=N"
  // is a rank count).
  MT_ASSIGN_OR_RETURN(const ir::Mesh mesh, ir::ParseMesh(r.mesh));
  out.set_mesh(mesh.ToString());
  SetMeshDims(mesh, out.mutable_mesh_dims());
  MT_ASSIGN_OR_RETURN(const ir::Mesh workload_mesh, ir::ParseMesh(canonical.mesh));
  if (workload_mesh.axes.size() == 1 && workload_mesh.axes[0].name == "ranks")
    out.set_workload_ranks(workload_mesh.axes[0].size);
  out.set_predicted_s(r.predicted_s);
  if (r.measured_s) out.set_measured_s(*r.measured_s);
  out.set_verified(r.verified);
  out.set_checked(r.checked);
  out.set_checked_extents(r.checked_extents);
  out.set_machine(r.machine);
  const std::map<std::string, std::string> names =
      w != nullptr ? Renames(*w, false) : std::map<std::string, std::string>{};
  for (const std::string& p : r.patterns) out.add_patterns(RenamePattern(p, names));
  out.set_tuner_version(r.tuner_version);
  out.set_created_unix_ms(r.created_unix_ms);
  out.set_profile(canonical.profile);
  out.set_workload_mesh(canonical.mesh);
  if (!r.library.empty() && !out.mutable_library()->ParseFromString(r.library)) {
    return absl::DataLossError(
        absl::StrCat("the library call stored with record ", r.id, " does not parse"));
  }
  out.set_timing(std::string(storage::TimingName(r.timing)));
  if (!r.sample.empty() && !out.mutable_sample()->ParseFromString(r.sample)) {
    return absl::DataLossError(
        absl::StrCat("the time sample stored with record ", r.id, " does not parse"));
  }
  return out;
}

// Whether the schedule of `record` of `program` (the request's, read once: the record is in
// the requester's names) fits on its mesh with `mem` bytes a rank: each statement's schedule
// judged legal under the budget, and a program of several statements' footprint as a whole
// within it (ir::ProgramOverBudget, as its tune judged it).
bool FitsBudget(const ir::StatementProgram& program, const v1::Record& record,
                const std::string& mem) {
  v1::Mesh mesh;
  *mesh.mutable_dims() = record.mesh_dims();
  mesh.set_mem_per_rank(mem);
  absl::StatusOr<ScheduleJob> job = JobOf(program, mesh, record.trace());
  if (!job.ok()) return false;
  std::vector<ir::Computation> replayed;
  for (size_t s = 0; s < job->traces.size(); ++s) {
    absl::StatusOr<ir::Computation> base = StatementBase(*job, static_cast<int>(s));
    if (!base.ok()) return false;
    absl::StatusOr<codegen::Prepared> judged =
        codegen::Prepare(*base, job->traces[s], codegen::Through::kJudge);
    if (!judged.ok() || !judged->verdict.legal) return false;
    if (program.single()) return true;
    const ir::Replay r = ir::ReplayTrace(*base, job->traces[s]);
    if (!r.status.ok()) return false;
    replayed.push_back(r.computation);
  }
  std::vector<const ir::Computation*> statements;
  for (const ir::Computation& c : replayed) statements.push_back(&c);
  size_t most = 0;
  const ir::Footprint f = ir::ProgramFootprint(program, statements, &most);
  return !ir::ProgramOverBudget(f, most, job->mesh.mem_per_rank_bytes).has_value();
}

// OK when exactly one of a mesh and a rank count is given, and the mesh's memory budget
// (no part of the workload) reads.
absl::Status CheckMeshOrRanks(const v1::Mesh& mesh, int64_t ranks) {
  if (!HasMeshAxes(mesh) == (ranks == 0)) {
    return absl::InvalidArgumentError(!HasMeshAxes(mesh)
                                          ? "give a mesh (e.g. x=2,y=2) or a rank count (e.g. 4)"
                                          : absl::StrCat("give exactly one of mesh (\"",
                                                         base::Excerpt(MeshText(mesh)),
                                                         "\") and ranks (", ranks, ")"));
  }
  return MemPerRankOf(mesh).status();
}

}  // namespace

absl::StatusOr<storage::Workload> RequestWorkload(const v1::Problem& problem, const v1::Mesh& mesh,
                                                  int64_t ranks, const std::string& profile) {
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram program, ProgramOf(problem));
  MT_RETURN_IF_ERROR(CheckMeshOrRanks(mesh, ranks));
  if (ranks != 0) return storage::MakeWorkload(program, ranks, ProfileOrDefault(profile));
  MT_ASSIGN_OR_RETURN(const ir::Mesh m, MeshAxesOf(mesh));
  return storage::MakeWorkload(program, m, ProfileOrDefault(profile));
}

absl::StatusOr<v1::LookupResponse> Lookup(storage::TuningDb& db, const v1::LookupRequest& request) {
  MT_ASSIGN_OR_RETURN(storage::Workload w, RequestWorkload(request.problem(), request.mesh(),
                                                           request.ranks(), request.profile()));
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram program, ProgramOf(request.problem()));
  const std::string& mem = request.mesh().mem_per_rank();
  const std::string& machine = request.machine();
  if (w.IsProgram() && request.nearest()) {
    return absl::InvalidArgumentError(
        "a program's lookup takes no --nearest yet: it replays one statement's schedule at "
        "other extents");
  }
  // With nearest, a schedule transferred from other extents instead.
  auto not_found = [&]() -> absl::StatusOr<v1::LookupResponse> {
    std::string why_none;
    if (request.nearest()) {
      MT_ASSIGN_OR_RETURN(std::optional<v1::LookupResponse> transferred,
                          TransferNearest(db, request, w, &why_none));
      if (transferred.has_value()) return *std::move(transferred);
    }
    return absl::NotFoundError(absl::StrCat(
        "no tuning record for ", Describe(request.problem()), " on ", w.MeshText(),
        " with profile ", w.profile,
        mem.empty() ? "" : absl::StrCat(" that fits ", base::Excerpt(mem), " per rank"),
        machine.empty() ? "" : absl::StrCat(" from machine ", base::Excerpt(machine)),
        why_none.empty() ? "" : absl::StrCat(", and ", why_none), "; tune it first"));
  };
  auto acceptable = [&](const v1::Record& r) {
    return (machine.empty() || r.machine() == machine) &&
           (mem.empty() || FitsBudget(program, r, mem));
  };
  MT_ASSIGN_OR_RETURN(std::optional<storage::TuningRecord> best, db.Best(w.fingerprint));
  if (!best.has_value()) return not_found();
  v1::LookupResponse out;
  MT_ASSIGN_OR_RETURN(*out.mutable_record(), ToMessage(*best, &w, &request.problem()));
  if (acceptable(out.record())) return out;
  // The best does not fit the budget or comes from another machine: the best of the others
  // that is acceptable.
  MT_ASSIGN_OR_RETURN(std::vector<storage::TuningRecord> all,
                      storage::ListAllRecords(db, w.fingerprint));
  std::sort(all.begin(), all.end(), storage::BetterRecord);
  for (const storage::TuningRecord& r : all) {
    MT_ASSIGN_OR_RETURN(v1::Record record, ToMessage(r, &w, &request.problem()));
    if (acceptable(record)) {
      *out.mutable_record() = std::move(record);
      return out;
    }
  }
  return not_found();
}

absl::StatusOr<v1::ListRecordsResponse> ListRecords(storage::TuningDb& db,
                                                    const v1::ListRecordsRequest& request) {
  if (request.page_size() < 0 || request.page_size() > storage::kMaxListLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size ", request.page_size(), " is out of range: 0 to ", storage::kMaxListLimit));
  }
  const int size = request.page_size() == 0 ? kDefaultPageSize : request.page_size();
  int64_t after = 0;
  if (!request.page_token().empty() &&
      (!absl::SimpleAtoi(request.page_token(), &after) || after < 0)) {
    return absl::InvalidArgumentError(absl::StrCat("page_token \"",
                                                   base::Excerpt(request.page_token()),
                                                   "\" is not a token that ListRecords returned"));
  }
  std::optional<storage::Workload> w;
  if (request.has_problem()) {
    MT_ASSIGN_OR_RETURN(
        w, RequestWorkload(request.problem(), request.mesh(), request.ranks(), request.profile()));
  }
  // One more than a page tells whether another page follows.
  const int ask = std::min(size + 1, storage::kMaxListLimit);
  MT_ASSIGN_OR_RETURN(std::vector<storage::TuningRecord> records,
                      db.List(w ? w->fingerprint : "", ask, after));
  v1::ListRecordsResponse out;
  const bool more = static_cast<int>(records.size()) > size ||
                    (ask == size && static_cast<int>(records.size()) == size);
  if (static_cast<int>(records.size()) > size) records.resize(size);
  for (const storage::TuningRecord& r : records) {
    MT_ASSIGN_OR_RETURN(*out.add_records(), ToMessage(r, w ? &*w : nullptr, &request.problem()));
  }
  if (more && !records.empty()) out.set_next_page_token(absl::StrCat(records.back().id));
  return out;
}

absl::StatusOr<v1::Record> GetRecord(storage::TuningDb& db, const v1::GetRecordRequest& request) {
  MT_ASSIGN_OR_RETURN(std::optional<storage::TuningRecord> record, db.Get(request.id()));
  if (!record.has_value())
    return absl::NotFoundError(absl::StrCat("no tuning record with id ", request.id()));
  if (!request.has_problem()) return ToMessage(*record, nullptr, nullptr);
  const CanonicalFields canonical = ParseCanonical(record->canonical_workload);
  // The record's mesh (or rank count) and profile, the request's statement or program.
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram program, ProgramOf(request.problem()));
  MT_ASSIGN_OR_RETURN(storage::Workload w,
                      storage::ReadWorkload(program, canonical.mesh, canonical.profile));
  if (w.fingerprint != record->fingerprint) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record ", request.id(), " is for ", canonical.expr, " (", canonical.extents, ", ",
        canonical.dtype, "); ", Describe(request.problem()),
        " is another problem (it canonicalises to ", base::Excerpt(w.expr, 2 * base::kMaxExcerpt),
        " (", base::Excerpt(w.extents, 2 * base::kMaxExcerpt), ", ", w.dtype, "))"));
  }
  return ToMessage(*record, &w, &request.problem());
}

absl::StatusOr<v1::CodegenRequest> ResolveCodegenRequest(storage::TuningDb& db,
                                                         const v1::CodegenRequest& request) {
  if (request.record_id() == 0 || !request.trace().text().empty()) return request;
  v1::GetRecordRequest get;
  get.set_id(request.record_id());
  // A problem with no statement only carries result_on_layer: no names to check against.
  if (request.has_problem() && !request.problem().expr().empty())
    *get.mutable_problem() = request.problem();
  MT_ASSIGN_OR_RETURN(v1::Record record, GetRecord(db, get));
  v1::CodegenRequest out = request;
  *out.mutable_problem() = record.problem();
  out.mutable_problem()->set_result_on_layer(request.problem().result_on_layer());
  if (!HasMeshAxes(out.mesh())) *out.mutable_mesh()->mutable_dims() = record.mesh_dims();
  *out.mutable_trace() = record.trace();
  if (record.has_library()) *out.mutable_library() = record.library();
  return out;
}

absl::Status StoreTuneResult(storage::TuningDb& db, const storage::Workload& w,
                             v1::TuneResult* result, const v1::TuneSummary* summary,
                             const ir::Trace* best) {
  v1::Record* record = result->mutable_record();
  storage::TuningRecord r;
  if (best != nullptr) {
    MT_ASSIGN_OR_RETURN(r.trace, storage::ToCanonicalTrace(w, *best));
  } else {
    MT_ASSIGN_OR_RETURN(r.trace, storage::ToCanonicalTrace(w, record->trace().text()));
  }
  r.mesh = record->mesh();
  r.predicted_s = record->predicted_s();
  if (record->has_measured_s()) r.measured_s = record->measured_s();
  MT_ASSIGN_OR_RETURN(r.timing, storage::ParseTiming(record->timing()));
  // A tune's times are as measured: timing left empty is "measured" when there is a time.
  if (r.measured_s.has_value() && r.timing == storage::Timing::kNone)
    r.timing = storage::Timing::kMeasured;
  if (record->has_sample()) r.sample = record->sample().SerializeAsString();
  r.verified = record->verified();
  r.machine = record->machine();
  r.checked = record->checked();
  r.checked_extents = record->checked_extents();
  const std::map<std::string, std::string> names = Renames(w, true);
  for (const std::string& p : record->patterns()) r.patterns.push_back(RenamePattern(p, names));
  r.tuner_version = storage::kTunerVersion;
  if (summary != nullptr) r.summary = summary->SerializeAsString();
  if (record->has_library()) r.library = record->library().SerializeAsString();
  r.created_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  MT_ASSIGN_OR_RETURN(int64_t id, db.Add(w, r));
  record->set_id(id);
  record->set_fingerprint(w.fingerprint);
  record->set_tuner_version(r.tuner_version);
  record->set_created_unix_ms(r.created_unix_ms);
  record->set_timing(std::string(storage::TimingName(r.timing)));
  record->set_profile(w.profile);
  record->set_workload_mesh(w.MeshText());
  result->set_stored(true);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::TuneSummary>> GetTuneSummary(storage::TuningDb& db, int64_t id) {
  MT_ASSIGN_OR_RETURN(std::optional<storage::TuningRecord> record, db.Get(id));
  if (!record.has_value())
    return absl::NotFoundError(absl::StrCat("no tuning record with id ", id));
  if (record->summary.empty()) return std::nullopt;
  v1::TuneSummary summary;
  if (!summary.ParseFromString(record->summary)) {
    return absl::DataLossError(
        absl::StrCat("the tune summary stored with record ", id, " does not parse"));
  }
  return summary;
}

}  // namespace meshtune::engine
