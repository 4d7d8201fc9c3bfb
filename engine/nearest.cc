#include "engine/nearest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/program.h"
#include "cost/cost_model.h"
#include "cost/cost_params.h"
#include "engine/prepare.h"
#include "engine/requests.h"
#include "engine/tune/tune_options.h"
#include "ir/mesh.h"

namespace meshtune::engine {

namespace {

// The extents of canonical extents text "i0=64,i1=32", by canonical index; empty when the
// text does not read so.
std::vector<int64_t> ParseExtents(absl::string_view text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, '=');
    int64_t extent = 0;
    if (!absl::SimpleAtoi(kv.second, &extent) || extent < 1) return {};
    out.push_back(extent);
  }
  return out;
}

// The canonical extents of a record's workload (the "extents: " line of its canonical text).
std::vector<int64_t> RecordExtents(const storage::TuningRecord& r) {
  for (absl::string_view line : absl::StrSplit(r.canonical_workload, '\n')) {
    if (absl::ConsumePrefix(&line, "extents: ")) return ParseExtents(line);
  }
  return {};
}

// How far apart two shapes are: the sum over indices of |log(a/b)|.
double Distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double d = 0;
  for (size_t j = 0; j < a.size() && j < b.size(); ++j)
    d += std::abs(std::log(static_cast<double>(a[j]) / static_cast<double>(b[j])));
  return d;
}

// `extents` in the requester's index names of `w`, "m=64,n=64,k=64".
std::string NamedExtents(const storage::Workload& w, const std::vector<int64_t>& extents) {
  std::vector<std::string> parts;
  for (size_t j = 0; j < extents.size() && j < w.index_names.size(); ++j)
    parts.push_back(absl::StrCat(w.index_names[j], "=", extents[j]));
  return absl::StrJoin(parts, ",");
}

struct Candidate {
  const storage::TuningRecord* record;
  double distance;
};

// The candidates worth replaying: the nearest extents first (then the lower id), one per
// distinct trace and mesh (the same schedule costs the same here), at most
// kMaxNearestCandidates.
std::vector<Candidate> Order(const std::vector<storage::TuningRecord>& records,
                             const std::vector<int64_t>& here) {
  std::vector<Candidate> all;
  for (const storage::TuningRecord& r : records) {
    const std::vector<int64_t> extents = RecordExtents(r);
    if (extents.size() != here.size()) continue;
    all.push_back({&r, Distance(extents, here)});
  }
  // Distances within rounding (64 is as far from 32 as from 128) are equal.
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (std::abs(a.distance - b.distance) > 1e-9) return a.distance < b.distance;
    return a.record->id < b.record->id;
  });
  std::vector<Candidate> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const Candidate& c : all) {
    if (static_cast<int>(out.size()) == kMaxNearestCandidates) break;
    if (seen.insert({c.record->trace, c.record->mesh}).second) out.push_back(c);
  }
  return out;
}

// The schedule of `r` on the request's problem (workload `w`) at its extents, costed with
// `params`; nullopt when it does not replay legally there or cannot be lowered.
std::optional<v1::Record> Replay(const storage::TuningRecord& r, const storage::Workload& w,
                                 const v1::LookupRequest& request, const cost::CostParams& params) {
  absl::StatusOr<std::string> trace = storage::FromCanonicalTrace(w, r.trace);
  if (!trace.ok()) return std::nullopt;
  absl::StatusOr<ir::Mesh> stored = ir::ParseMesh(r.mesh);  // the database's text, read once
  if (!stored.ok()) return std::nullopt;
  v1::Record out;
  out.set_mesh(stored->ToString());
  SetMeshDims(*stored, out.mutable_mesh_dims());
  out.mutable_trace()->set_text(*trace);
  v1::Mesh mesh = MeshMessage(*stored);
  mesh.clear_axes();
  mesh.set_mem_per_rank(request.mesh().mem_per_rank());
  absl::StatusOr<codegen::Program> program = LowerTrace(request.problem(), mesh, out.trace());
  if (!program.ok()) return std::nullopt;
  out.set_predicted_s(
      cost::EstimateCost(*program, cost::ForRanks(params, program->Ranks())).seconds);
  for (const codegen::TransferSummary& s : codegen::Summarize(*program))
    out.add_patterns(codegen::PatternLabel(s.tensor, s.loop, s.pattern));
  *out.mutable_problem() = request.problem();
  if (out.problem().dtype().empty()) out.mutable_problem()->set_dtype("f32");
  out.set_tuner_version(storage::kTunerVersion);
  out.set_profile(w.profile);
  out.set_workload_mesh(w.MeshText());
  if (w.IsRankCount()) out.set_workload_ranks(w.ranks);
  return out;
}

}  // namespace

absl::StatusOr<std::optional<v1::LookupResponse>> TransferNearest(storage::TuningDb& db,
                                                                  const v1::LookupRequest& request,
                                                                  const storage::Workload& w,
                                                                  std::string* why_none) {
  MT_ASSIGN_OR_RETURN(std::vector<storage::TuningRecord> records, db.BestOfSameStructure(w));
  const std::vector<int64_t> here = ParseExtents(w.extents);
  const std::vector<Candidate> candidates = Order(records, here);
  if (candidates.empty()) {
    *why_none = "no record of this problem at other extents";
    return std::nullopt;
  }
  MT_ASSIGN_OR_RETURN(
      cost::CostParams params,
      ProfileCostParams(request.profile(), w.IsRankCount() ? w.ranks : w.mesh.Ranks()));
  std::optional<v1::LookupResponse> best;
  for (const Candidate& c : candidates) {
    std::optional<v1::Record> record = Replay(*c.record, w, request, params);
    if (!record.has_value()) continue;
    if (best.has_value() && !(record->predicted_s() < best->record().predicted_s())) continue;
    best.emplace();
    *best->mutable_record() = *std::move(record);
    best->set_transferred(true);
    best->set_transferred_from(c.record->id);
    best->set_transferred_extents(NamedExtents(w, RecordExtents(*c.record)));
  }
  if (!best.has_value()) {
    *why_none = absl::StrCat(candidates.size() == 1
                                 ? "the one record"
                                 : absl::StrCat("none of the ", candidates.size(), " records"),
                             " of this problem at other extents ",
                             candidates.size() == 1 ? "does not replay" : "replays", " legally at ",
                             base::Excerpt(NamedExtents(w, here), 2 * base::kMaxExcerpt));
  }
  return best;
}

}  // namespace meshtune::engine
