#include "engine/program_tune.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "ir/statement_program.h"
#include "search/program_tuner.h"

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

void SetRun(const search::CandidateRun& run, v1::ProgramResult::Schedule* s) {
  if (run.seconds) s->set_measured_s(*run.seconds);
  for (double r : run.repetitions) s->add_repetitions(r);
  s->set_verified(run.verified);
  if (run.error) s->set_error(*run.error);
}

}  // namespace

absl::StatusOr<v1::TuneResult> RunProgramTune(const v1::TuneRequest& request,
                                              const MachineNumbers& numbers,
                                              const search::MpiRunnerOptions& mpi,
                                              const std::function<bool()>& cancelled) {
  const v1::Problem& stated = request.problem();
  absl::StatusOr<ir::StatementProgram> program =
      ir::ParseStatementProgram(stated.expr(), stated.extents(), stated.dtype());
  if (!program.ok()) return program.status();
  if (stated.layouts_size() > 0 || request.in_place()) {
    return absl::InvalidArgumentError(
        "given layouts (--layout, --in-place) are not supported for programs of several "
        "statements yet");
  }
  // The search's settings, the meshes and the machine numbers as for the first statement.
  std::string warning;
  search::ProgramTuneOptions options;
  MT_ASSIGN_OR_RETURN(options.search,
                      TuneOptionsFor(program->statements[0], request, &warning, numbers));
  options.program = *program;
  options.search.cancelled = cancelled;
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
    SetRun(m.run, s);
    if (m.label == "separate") separate_run = &m;
  }
  const search::MeasuredProgram* best_run =
      r->best_measurement >= 0 ? &r->measurements[r->best_measurement] : nullptr;
  if (best_run != nullptr) {
    SetRun(best_run->run, p.mutable_best());
    p.mutable_best()->set_label(best_run->label);
  }
  if (separate_run != nullptr) SetRun(separate_run->run, p.mutable_separate());
  if (best_run != nullptr && separate_run != nullptr && separate_run->run.verified &&
      separate_run->run.seconds && best_run->run.seconds) {
    p.set_separate_over_best(*separate_run->run.seconds / *best_run->run.seconds);
  }
  p.set_checked(r->checked);
  p.set_pace_s(r->pace_s);
  for (const search::SearchCounts& c : r->counts) p.add_costed(c.costed);
  for (const std::string& s : r->strategies) p.add_strategies(s);
  p.set_extents(program->ExtentsString());
  out.set_seconds(r->seconds);
  out.set_pace_s(r->pace_s);
  for (const std::string& refused : r->refused) out.add_refused(refused);
  if (!warning.empty()) out.add_warnings(warning);
  out.add_warnings("programs of several statements are not stored in the tuning database yet");
  return out;
}

}  // namespace meshtune::engine
