#include "engine/tune_messages.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/requests.h"
#include "engine/tune_options.h"
#include "runtime/gemm_form.h"

namespace meshtune::engine {

namespace {

void SetCounts(const search::SearchCounts& counts, v1::TuneResult* out) {
  out->set_enumerated(counts.enumerated);
  out->set_legal(counts.legal);
  for (const auto& [reason, n] : counts.pruned) (*out->mutable_pruned())[reason] = n;
  out->set_costed(counts.costed);
  out->set_duplicates(counts.duplicates);
  out->set_legal_estimated(counts.estimated);
  out->set_bounded(counts.bounded);
  out->set_checks_closed_form(counts.closed_form_checks);
  out->set_checks_isl(counts.isl_checks);
  out->set_lowerings_isl(counts.isl_lowerings);
}

}  // namespace

std::string RequestedProfile(const std::string& profile) {
  return profile.empty() ? "default" : profile;
}

std::string TuneJobKey(const std::string& fingerprint, const search::TuneOptions& options,
                       const v1::TuneRequest& request) {
  return absl::StrFormat(
      "%s|mem=%s|top_k=%d|budget=%.17g|evals=%d|seed=%d|replication=%d|idle=%d|split=%d|steps=%d|"
      "alltoall=%d",
      fingerprint, request.mesh().mem_per_rank(), options.top_k, options.budget_s,
      options.max_evaluations, options.evolution.seed, options.space.allow_replication ? 1 : 0,
      request.allow_idle_ranks() ? 1 : 0, options.space.split_distributed ? 1 : 0,
      options.space.rotation_steps ? 1 : 0, options.space.all_to_all ? 1 : 0);
}

v1::TuneProgress ProgressMessage(const search::SearchProgress& p) {
  v1::TuneProgress out;
  out.set_stage(p.stage);
  out.set_enumerated(p.counts.enumerated);
  out.set_legal(p.counts.legal);
  for (const auto& [reason, n] : p.counts.pruned) (*out.mutable_pruned())[reason] = n;
  out.set_legal_estimated(p.counts.estimated);
  out.set_costed(p.counts.costed);
  out.set_measured(p.measured);
  out.set_to_measure(p.to_measure);
  if (p.best_predicted_s) out.set_best_predicted_s(*p.best_predicted_s);
  if (p.best_measured_s) out.set_best_measured_s(*p.best_measured_s);
  out.set_elapsed_s(p.elapsed_s);
  out.set_statement(p.statement);
  out.set_statements(p.statements);
  return out;
}

// The library's measurements of `r` into `out`; when the fastest verified one beats the
// winner beyond the measurements' noise (kLibraryMargin), the record becomes the library's
// call (Record.library, with its time; the trace stays the fastest schedule's). vs_library is
// the answer's time over the fastest library run's.
void SetLibrary(const search::SearchResult& r, const std::string& name, v1::TuneResult* out) {
  const v1::LibraryRun* fastest = nullptr;
  for (const search::LibraryMeasurement& m : r.library) {
    v1::LibraryRun* l = out->add_library();
    l->set_library(name);
    l->set_prow(m.config.prow);
    l->set_pcol(m.config.pcol);
    l->set_nb(m.config.nb);
    if (m.run.verified && m.run.seconds) l->set_measured_s(*m.run.seconds);
    l->set_verified(m.run.verified);
    if (m.run.error) l->set_error(*m.run.error);
  }
  for (const v1::LibraryRun& l : out->library()) {
    if (l.has_measured_s() && l.measured_s() > 0 &&
        (fastest == nullptr || l.measured_s() < fastest->measured_s())) {
      fastest = &l;
    }
  }
  if (fastest == nullptr || !r.verified || !r.measured_s) return;
  const double ratio = *r.measured_s / fastest->measured_s();
  if (ratio <= kLibraryMargin) {
    out->set_vs_library(ratio);
    return;
  }
  v1::Record* record = out->mutable_record();
  *record->mutable_library() = *fastest;
  record->set_measured_s(fastest->measured_s());
  record->set_verified(true);
  record->set_checked("measured");
  record->clear_checked_extents();
  out->set_vs_library(1.0);
  out->add_warnings(absl::StrFormat(
      "the answer is ScaLAPACK's %s (%dx%d grid, NB %d): it measured %.4g s, %.2fx faster than "
      "the fastest schedule's %.4g s",
      name, fastest->prow(), fastest->pcol(), fastest->nb(), fastest->measured_s(), ratio,
      *r.measured_s));
}

v1::TuneResult ResultMessage(const search::SearchResult& r, const v1::TuneRequest& request,
                             const storage::Workload& w) {
  v1::TuneResult out;
  v1::Record* record = out.mutable_record();
  *record->mutable_problem() = request.problem();
  if (record->problem().dtype().empty()) record->mutable_problem()->set_dtype("f32");
  record->set_mesh(r.mesh.ToString());
  SetMeshDims(r.mesh, record->mutable_mesh_dims());
  record->set_workload_mesh(w.MeshText());
  if (w.IsRankCount()) record->set_workload_ranks(w.ranks);
  record->mutable_trace()->set_text(r.best.trace);
  record->set_predicted_s(r.best.cost.seconds);
  if (r.measured_s) record->set_measured_s(*r.measured_s);
  record->set_verified(r.verified);
  record->set_checked(r.checked);
  record->set_checked_extents(r.checked_extents);
  for (const std::string& refused : r.refused) out.add_refused(refused);
  for (const std::string& p : r.best.patterns) record->add_patterns(p);
  record->set_profile(RequestedProfile(request.profile()));
  record->set_machine(ProfileMachine(record->profile(), r.mesh.Ranks()));
  SetCounts(r.counts, &out);
  for (const search::MeasuredCandidate& m : r.measurements) {
    v1::MeasuredCandidate* pm = out.add_measurements();
    pm->mutable_trace()->set_text(m.candidate.trace);
    pm->set_mesh(m.mesh.ToString());
    SetMeshDims(m.mesh, pm->mutable_mesh_dims());
    pm->set_family(m.family);
    pm->set_predicted_s(m.candidate.cost.seconds);
    if (m.run.seconds) pm->set_measured_s(*m.run.seconds);
    pm->set_verified(m.run.verified);
    if (m.run.error) pm->set_error(*m.run.error);
    for (const std::string& p : m.candidate.patterns) pm->add_patterns(p);
  }
  SetLibrary(r, request.problem().dtype() == "f64" ? "PDGEMM" : "PSGEMM", &out);
  out.set_pace_s(r.pace_s);
  out.set_strategy(r.strategy);
  out.set_seconds(r.seconds);
  if (r.lower_bound_ratio) out.set_lower_bound_ratio(*r.lower_bound_ratio);
  out.set_comm_words_per_rank(r.best.cost.comm_words_per_rank);
  return out;
}

}  // namespace meshtune::engine
