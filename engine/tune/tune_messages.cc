#include "engine/tune/tune_messages.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/sample_stats.h"
#include "engine/requests.h"
#include "engine/tune/tune_options.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "runtime/launch/run_result.h"
#include "runtime/library/gemm_form.h"
#include "search/runner.h"

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
  // A program's answer carries the requester's names in its program trace: only requests
  // alike in every field share its job.
  if (!options.program.single()) return absl::StrCat("program ", request.SerializeAsString());
  return absl::StrFormat(
      "%s|mem=%s|top_k=%d|budget=%.17g|evals=%d|seed=%d|replication=%d|idle=%d|split=%d|steps=%d|"
      "alltoall=%d",
      fingerprint, request.mesh().mem_per_rank(), options.top_k, options.budget_s,
      options.max_evaluations, options.evolution.seed, options.space.allow_replication ? 1 : 0,
      request.allow_idle_ranks() ? 1 : 0, options.space.split_distributed ? 1 : 0,
      options.space.rotation_steps ? 1 : 0, options.space.all_to_all ? 1 : 0);
}

v1::TimeSample SampleMessage(const search::CandidateRun& run) {
  return runtime::TimeSampleOf(run.samples, run.batch);
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

double RatioCiLevel(const v1::Comparison& c) {
  return c.has_ratio_ci_level() ? c.ratio_ci_level() : base::MedianCiLevel(c.rounds());
}

v1::Comparison ComparisonMessage(const search::Compared& c, const std::string& leader,
                                 const search::CandidateRun& leader_run,
                                 const std::string& runner_up,
                                 const search::CandidateRun& runner_up_run) {
  v1::Comparison out;
  out.set_leader(leader);
  out.set_runner_up(runner_up);
  *out.mutable_leader_sample() = SampleMessage(leader_run);
  *out.mutable_runner_up_sample() = SampleMessage(runner_up_run);
  out.set_rounds(c.rounds);
  out.set_ratio(c.ratio);
  out.set_ratio_ci_low(c.ratio_low);
  out.set_ratio_ci_high(c.ratio_high);
  out.set_ratio_ci_level(c.ratio_level);
  out.set_separated(c.separated);
  return out;
}

namespace {

// The comparison `c` (indices into choice.labels: r's measurements, a program's when r is
// one, then its library runs) as a message.
v1::Comparison TuneComparison(const search::Compared& c, const search::SearchResult& r) {
  const auto run = [&r](int i) -> const search::CandidateRun& {
    const int measured =
        static_cast<int>(r.program ? r.program->measurements.size() : r.measurements.size());
    if (i >= measured) return r.library[i - measured].run;
    return r.program ? r.program->measurements[i].run : r.measurements[i].run;
  };
  return ComparisonMessage(c, r.choice.labels[c.a], run(c.a), r.choice.labels[c.b], run(c.b));
}

// The library's measurements of `r` into `out`; when the tuner chose the library
// (search/decision.h: no schedule faster beyond the noise), the record becomes the library's
// call (Record.library, with its time and sample; the trace stays the chosen schedule's).
// vs_library is the answer's time over the fastest library configuration's, with its interval.
void SetLibrary(const search::SearchResult& r, const std::string& name, v1::TuneResult* out) {
  for (const search::LibraryMeasurement& m : r.library) {
    v1::LibraryRun* l = out->add_library();
    l->set_library(name);
    l->set_prow(m.config.prow);
    l->set_pcol(m.config.pcol);
    l->set_nb(m.config.nb);
    if (m.run.verified && m.run.seconds && !m.implausible) l->set_measured_s(*m.run.seconds);
    l->set_verified(m.run.verified && !m.implausible);
    if (m.run.error) l->set_error(*m.run.error);
    if (m.implausible) l->set_implausible(*m.implausible);
    if (!m.run.samples.empty()) *l->mutable_sample() = SampleMessage(m.run);
  }
  const search::MeasuredChoice& choice = r.choice;
  if (choice.leader) *out->mutable_comparison() = TuneComparison(*choice.leader, r);
  out->set_decision(choice.verdict);
  if (choice.vs_library) {
    out->set_vs_library(choice.library_answer >= 0 ? 1.0 : choice.vs_library->ratio);
    if (choice.library_answer < 0) {
      out->set_vs_library_ci_low(choice.vs_library->ratio_low);
      out->set_vs_library_ci_high(choice.vs_library->ratio_high);
      out->set_vs_library_ci_level(choice.vs_library->ratio_level);
    }
  }
  if (choice.library_answer < 0) return;
  const v1::LibraryRun& answer = out->library(choice.library_answer);
  v1::Record* record = out->mutable_record();
  *record->mutable_library() = answer;
  record->set_measured_s(answer.measured_s());
  *record->mutable_sample() = answer.sample();
  record->set_verified(true);
  record->set_checked("measured");
  record->clear_checked_extents();
  std::string against = "no schedule verified";
  if (r.measured_s) {
    // The chosen schedule against the library, from the other side of vs_library.
    const search::Compared& v = *choice.vs_library;
    against = absl::StrFormat(
        "the chosen schedule's %.4g s is %.3gx its time (%d%% interval %.3g-%.3g, %d rounds): "
        "%s",
        *r.measured_s, v.ratio, base::CiPercent(v.ratio_level), v.ratio_low, v.ratio_high, v.rounds,
        v.separated ? "slower beyond the noise" : "a tie within noise, and the library stays");
  }
  out->add_warnings(absl::StrFormat(
      "the answer is ScaLAPACK's %s (%dx%d grid, NB %d): it measured %.4g s (median of %d, 95%% "
      "interval %.4g-%.4g s); %s",
      name, answer.prow(), answer.pcol(), answer.nb(), answer.measured_s(), answer.sample().n(),
      answer.sample().ci_low_s(), answer.sample().ci_high_s(), against));
}

v1::ProgramResult::Schedule ScheduleOf(const ir::StatementProgram& program,
                                       const search::ProgramCandidate& c, const ir::Mesh& mesh,
                                       const std::string& label) {
  v1::ProgramResult::Schedule out;
  out.set_label(label);
  out.set_mesh(mesh.ToString());
  for (size_t s = 0; s < c.statements.size(); ++s) {
    v1::ProgramResult::Statement* st = out.add_statements();
    st->set_expr(program.statements[s].ToString());
    st->set_trace(c.statements[s].trace);
    st->set_predicted_s(c.statements[s].cost.seconds);
    for (const std::string& p : c.statements[s].patterns) st->add_transfers(p);
  }
  for (const search::Move& m : c.moves) {
    v1::ProgramResult::Move* mv = out.add_moves();
    mv->set_tensor(m.tensor);
    mv->set_producer(m.producer + 1);
    mv->set_consumer(m.consumer + 1);
    mv->set_in_place(m.in_place);
    mv->set_bytes_max(m.bytes_max);
    mv->set_predicted_s(m.seconds);
  }
  out.set_predicted_s(c.seconds);
  return out;
}

void SetRun(const search::MeasuredProgram& m, v1::ProgramResult::Schedule* s) {
  const search::CandidateRun& run = m.run;
  if (run.seconds && !m.implausible) s->set_measured_s(*run.seconds);
  for (double r : run.repetitions) s->add_repetitions(r);
  s->set_verified(run.verified && !m.implausible);
  if (m.implausible) {
    s->set_error(*m.implausible);
  } else if (run.error) {
    s->set_error(*run.error);
  }
  if (!run.samples.empty()) *s->mutable_sample() = SampleMessage(run);
}

// The program's winner as a record of its workload, in the request's names.
v1::Record RecordOf(const v1::Problem& stated, const ir::StatementProgram& program,
                    const v1::ProgramResult& result) {
  const v1::ProgramResult::Schedule& best = result.best();
  std::vector<std::string> traces;
  for (const v1::ProgramResult::Statement& s : best.statements()) traces.push_back(s.trace());
  v1::Record record;
  *record.mutable_problem() = stated;
  if (stated.dtype().empty()) record.mutable_problem()->set_dtype("f32");
  record.mutable_trace()->set_text(ir::ProgramTraceText(program, traces));
  record.set_mesh(best.mesh());
  record.set_predicted_s(best.predicted_s());
  if (best.has_measured_s()) {
    record.set_measured_s(best.measured_s());
    record.set_timing("measured");
    *record.mutable_sample() = best.sample();
  }
  record.set_verified(best.verified());
  record.set_checked(result.checked());
  for (const v1::ProgramResult::Statement& s : best.statements()) {
    for (const std::string& t : s.transfers()) record.add_patterns(t);
  }
  return record;
}

// The result message of a tune of a program of several statements: its `program` the
// schedules (best, separate, those measured), `record` the winner as one record of the
// program's workload, its trace a program trace (ir/program_trace.h) in the request's names.
v1::TuneResult ProgramResultMessage(const search::SearchResult& r, const v1::TuneRequest& request,
                                    const ir::StatementProgram& program,
                                    const std::vector<ir::Mesh>& meshes) {
  const search::ProgramAnswer& answer = *r.program;
  v1::TuneResult out;
  v1::ProgramResult& p = *out.mutable_program();
  *p.mutable_best() = ScheduleOf(program, answer.best, r.mesh, "best");
  *p.mutable_separate() =
      ScheduleOf(program, answer.separate, meshes[answer.separate.mesh], "separate");
  const search::MeasuredProgram* separate_run = nullptr;
  for (const search::MeasuredProgram& m : answer.measurements) {
    v1::ProgramResult::Schedule* s = p.add_measured();
    *s = ScheduleOf(program, m.candidate, meshes[m.candidate.mesh], m.label);
    SetRun(m, s);
    if (m.label == "separate") separate_run = &m;
  }
  const search::MeasuredProgram* best_run =
      answer.best_measurement >= 0 ? &answer.measurements[answer.best_measurement] : nullptr;
  if (best_run != nullptr) {
    SetRun(*best_run, p.mutable_best());
    p.mutable_best()->set_label(best_run->label);
  }
  if (separate_run != nullptr) SetRun(*separate_run, p.mutable_separate());
  if (best_run != nullptr && separate_run != nullptr && separate_run->run.verified &&
      separate_run->run.seconds && best_run->run.seconds) {
    p.set_separate_over_best(*separate_run->run.seconds / *best_run->run.seconds);
  }
  p.set_checked(r.checked);
  for (const search::SearchCounts& c : answer.counts) p.add_costed(c.costed);
  for (const std::string& s : answer.strategies) p.add_strategies(s);
  p.set_extents(program.ExtentsString());
  out.set_seconds(r.seconds);
  for (const std::string& refused : r.refused) out.add_refused(refused);
  *out.mutable_record() = RecordOf(request.problem(), program, p);
  SetLibrary(r, search::LibraryName(program.statements[0]), &out);
  if (r.lower_bound) out.set_lower_bound_words(*r.lower_bound);
  return out;
}

}  // namespace

v1::TuneResult ResultMessage(const search::SearchResult& r, const v1::TuneRequest& request,
                             const storage::Workload& w, const search::TuneOptions& options) {
  if (r.program) return ProgramResultMessage(r, request, options.program, options.meshes);
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
  if (r.measured_s) {
    record->set_measured_s(*r.measured_s);
    record->set_timing("measured");
    for (const search::MeasuredCandidate& m : r.measurements) {
      if (m.candidate.trace == r.best.trace && m.mesh.ToString() == r.mesh.ToString() &&
          m.run.seconds == r.measured_s) {
        *record->mutable_sample() = SampleMessage(m.run);
      }
    }
  }
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
    if (m.run.seconds && !m.implausible) pm->set_measured_s(*m.run.seconds);
    pm->set_verified(m.run.verified && !m.implausible);
    if (m.run.error) pm->set_error(*m.run.error);
    if (m.implausible) pm->set_implausible(*m.implausible);
    if (!m.run.samples.empty()) *pm->mutable_sample() = SampleMessage(m.run);
    for (const std::string& p : m.candidate.patterns) pm->add_patterns(p);
  }
  SetLibrary(r, search::LibraryName(options.program.statements[0]), &out);
  out.set_strategy(r.strategy);
  out.set_seconds(r.seconds);
  if (r.lower_bound_ratio) out.set_lower_bound_ratio(*r.lower_bound_ratio);
  if (r.lower_bound) out.set_lower_bound_words(*r.lower_bound);
  out.set_comm_words_per_rank(r.best.cost.comm_words_per_rank);
  return out;
}

}  // namespace meshtune::engine
