#include "engine/program_tune.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "engine/job.h"
#include "engine/records.h"
#include "engine/tune_messages.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "search/program_tuner.h"
#include "storage/workload.h"

namespace meshtune::engine {

namespace {

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

}  // namespace

absl::StatusOr<v1::TuneResult> RunProgramTune(const v1::TuneRequest& request,
                                              const MachineNumbers& numbers,
                                              const search::MpiRunnerOptions& mpi,
                                              const std::function<bool()>& cancelled,
                                              storage::TuningDb* db,
                                              const TuneProgressFn& progress) {
  const v1::Problem& stated = request.problem();
  absl::StatusOr<ir::StatementProgram> program = ProgramOf(stated);
  if (!program.ok()) return program.status();
  if (request.in_place()) {
    return absl::InvalidArgumentError(std::string(kLayoutsTakeOneStatement));
  }
  // The search's settings, the meshes and the machine numbers as for the first statement.
  std::string warning;
  search::ProgramTuneOptions options;
  MT_ASSIGN_OR_RETURN(options.search,
                      TuneOptionsFor(program->statements[0], request, &warning, numbers));
  options.program = *program;
  options.search.cancelled = cancelled;
  if (progress) {
    options.progress = [&progress](const search::SearchProgress& p) {
      progress(ProgressMessage(p));
    };
  }
  const std::unique_ptr<search::Runner> runner =
      options.search.top_k == 0 ? search::NewModelOnlyRunner() : search::NewMpiRunner(mpi);
  absl::StatusOr<search::ProgramTuneResult> r = search::TuneProgram(options, *runner);
  if (!r.ok()) return r.status();

  v1::TuneResult out;
  v1::ProgramResult& p = *out.mutable_program();
  *p.mutable_best() = ScheduleOf(*program, r->best, r->mesh, "best");
  const ir::Mesh& separate_mesh = options.search.meshes[r->separate.mesh];
  *p.mutable_separate() = ScheduleOf(*program, r->separate, separate_mesh, "separate");
  const search::MeasuredProgram* separate_run = nullptr;
  for (const search::MeasuredProgram& m : r->measurements) {
    v1::ProgramResult::Schedule* s = p.add_measured();
    *s = ScheduleOf(*program, m.candidate, options.search.meshes[m.candidate.mesh], m.label);
    SetRun(m, s);
    if (m.label == "separate") separate_run = &m;
  }
  const search::MeasuredProgram* best_run =
      r->best_measurement >= 0 ? &r->measurements[r->best_measurement] : nullptr;
  if (best_run != nullptr) {
    SetRun(*best_run, p.mutable_best());
    p.mutable_best()->set_label(best_run->label);
  }
  if (separate_run != nullptr) SetRun(*separate_run, p.mutable_separate());
  if (best_run != nullptr && separate_run != nullptr && separate_run->run.verified &&
      separate_run->run.seconds && best_run->run.seconds) {
    p.set_separate_over_best(*separate_run->run.seconds / *best_run->run.seconds);
  }
  p.set_checked(r->checked);
  for (const search::SearchCounts& c : r->counts) p.add_costed(c.costed);
  for (const std::string& s : r->strategies) p.add_strategies(s);
  p.set_extents(program->ExtentsString());
  out.set_seconds(r->seconds);
  out.set_decision(r->verdict);
  if (r->leader) {
    const search::MeasuredProgram& a = r->measurements[r->leader->a];
    const search::MeasuredProgram& b = r->measurements[r->leader->b];
    *out.mutable_comparison() = ComparisonMessage(*r->leader, a.label, a.run, b.label, b.run);
  }
  for (const std::string& refused : r->refused) out.add_refused(refused);
  if (!warning.empty()) out.add_warnings(warning);
  *out.mutable_record() = RecordOf(stated, *program, p);
  if (db != nullptr && (p.best().verified() || r->measurements.empty())) {
    const std::string profile = RequestedProfile(request.profile());
    absl::StatusOr<storage::Workload> w =
        request.ranks() != 0 ? storage::MakeWorkload(*program, request.ranks(), profile)
                             : storage::MakeWorkload(*program, options.search.meshes[0], profile);
    const absl::Status stored = w.ok() ? StoreTuneResult(*db, *w, &out) : w.status();
    if (!stored.ok()) {
      out.add_warnings(
          absl::StrCat("the result was not stored in the tuning database: ", stored.message()));
    }
  }
  return out;
}

}  // namespace meshtune::engine
