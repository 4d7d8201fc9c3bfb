#include "runtime/launch/worker_job.h"

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codegen/program_proto.h"

namespace meshtune::runtime {

namespace {

v1::Statement::Access AccessProto(const ProblemSpec::Access& a) {
  v1::Statement::Access m;
  m.set_tensor(a.tensor);
  for (const std::string& i : a.indices) m.add_indices(i);
  return m;
}

ProblemSpec::Access AccessOf(const v1::Statement::Access& m) {
  return {m.tensor(), {m.indices().begin(), m.indices().end()}};
}

// InvalidArgument when `a` names no tensor or uses an index without an extent.
absl::Status CheckAccess(const ProblemSpec::Access& a, const ProblemSpec& spec,
                         const std::string& where) {
  if (a.tensor.empty()) return absl::InvalidArgumentError(absl::StrCat(where, " names no tensor"));
  for (const std::string& index : a.indices) {
    if (spec.extents.count(index) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " uses index ", index, ", which has no extent"));
    }
  }
  return absl::OkStatus();
}

v1::Statement StatementProto(const ProblemSpec& p) {
  v1::Statement s;
  *s.mutable_output() = AccessProto(p.output);
  for (const ProblemSpec::Access& a : p.operands) *s.add_operands() = AccessProto(a);
  s.set_sum(p.sum);
  s.set_accumulate(p.accumulate);
  for (const auto& [index, extent] : p.extents) (*s.mutable_extents())[index] = extent;
  return s;
}

// The statement `s` says; InvalidArgument naming `where` ("job.statement") when malformed.
absl::StatusOr<ProblemSpec> SpecOf(const v1::Statement& s, const std::string& where) {
  ProblemSpec p;
  p.output = AccessOf(s.output());
  for (const v1::Statement::Access& a : s.operands()) p.operands.push_back(AccessOf(a));
  p.sum = s.sum();
  p.accumulate = s.accumulate();
  for (const auto& [index, extent] : s.extents()) {
    if (extent <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": index ", index, " has extent ", extent));
    }
    p.extents[index] = extent;
  }
  if (absl::Status st = CheckAccess(p.output, p, where + ".output"); !st.ok()) return st;
  if (p.operands.empty()) return absl::InvalidArgumentError(absl::StrCat(where, " has no operand"));
  for (size_t i = 0; i < p.operands.size(); ++i) {
    const std::string at = absl::StrCat(where, ".operands[", i, "]");
    if (absl::Status st = CheckAccess(p.operands[i], p, at); !st.ok()) return st;
  }
  return p;
}

}  // namespace

std::vector<StatementJob> WorkerJob::Statements() const {
  std::vector<StatementJob> all{{problem, program}};
  all.insert(all.end(), later.begin(), later.end());
  return all;
}

v1::WorkerJob ToProto(const WorkerJob& job) {
  v1::WorkerJob m;
  *m.mutable_statement() = StatementProto(job.problem);
  for (const StatementJob& j : job.later) {
    v1::WorkerStatement* w = m.add_later_statements();
    *w->mutable_statement() = StatementProto(j.problem);
    if (!job.library) *w->mutable_program() = codegen::ToProto(j.program);
  }
  if (job.library) {
    v1::LibraryGemm* l = m.mutable_library();
    l->set_prow(job.library->prow);
    l->set_pcol(job.library->pcol);
    l->set_nb(job.library->nb);
    l->set_dtype_bytes(job.library_dtype_bytes);
  } else {
    *m.mutable_program() = codegen::ToProto(job.program);
  }
  m.set_reps(job.options.reps);
  m.set_warmup(job.options.warmup);
  m.set_seed(job.options.seed);
  m.set_inject_fault(job.options.inject_fault);
  return m;
}

absl::StatusOr<WorkerJob> FromProto(const v1::WorkerJob& m) {
  WorkerJob job;
  absl::StatusOr<ProblemSpec> first = SpecOf(m.statement(), "job.statement");
  if (!first.ok()) return first.status();
  job.problem = *std::move(first);
  for (int i = 0; i < m.later_statements_size(); ++i) {
    const std::string where = absl::StrCat("job.later_statements[", i, "]");
    absl::StatusOr<ProblemSpec> spec =
        SpecOf(m.later_statements(i).statement(), where + ".statement");
    if (!spec.ok()) return spec.status();
    job.later.push_back({*std::move(spec), {}});
    if (m.has_library()) continue;  // the library's chain runs no Program
    absl::StatusOr<codegen::Program> program = codegen::FromProto(m.later_statements(i).program());
    if (!program.ok()) return program.status();
    job.later.back().program = *std::move(program);
  }
  if (m.has_library()) {
    const v1::LibraryGemm& l = m.library();
    if (job.later.empty() && !GemmFormOf(job.problem)) {
      return absl::InvalidArgumentError("job.library: the statement is not of matmul form");
    }
    std::vector<ProblemSpec> statements;
    for (const StatementJob& s : job.Statements()) statements.push_back(s.problem);
    if (absl::StatusOr<std::vector<GemmForm>> forms = GemmChainOf(statements); !forms.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("job.library: ", forms.status().message()));
    }
    if (l.prow() < 1 || l.pcol() < 1 || l.nb() < 1 ||
        (l.dtype_bytes() != 4 && l.dtype_bytes() != 8)) {
      return absl::InvalidArgumentError(absl::StrCat("job.library: grid ", l.prow(), "x", l.pcol(),
                                                     ", NB ", l.nb(), ", ", l.dtype_bytes(),
                                                     "-byte elements is not a configuration"));
    }
    job.library = LibraryGemmConfig{l.prow(), l.pcol(), l.nb()};
    job.library_dtype_bytes = l.dtype_bytes();
  } else {
    absl::StatusOr<codegen::Program> program = codegen::FromProto(m.program());
    if (!program.ok()) return program.status();
    job.program = *std::move(program);
  }
  job.options.reps = m.reps();
  job.options.warmup = m.warmup();
  job.options.seed = m.seed();
  job.options.inject_fault = m.inject_fault();
  return job;
}

absl::Status WriteWorkerJobs(const WorkerJobSet& set, const std::string& path) {
  v1::WorkerJobs m;
  for (const WorkerJob& job : set.jobs) *m.add_jobs() = ToProto(job);
  m.set_min_rounds(set.rounds.min_rounds);
  m.set_max_rounds(set.rounds.max_rounds);
  m.set_budget_s(set.rounds.budget_s);
  m.set_order_seed(set.rounds.seed);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !m.SerializeToOstream(&out) || !out.flush()) {
    return absl::InternalError(absl::StrCat("cannot write the worker's job to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkerJobSet> ReadWorkerJobs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read the job file ", path));
  v1::WorkerJobs m;
  if (!m.ParseFromIstream(&in)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the job file ", path, " is not a meshtune.v1.WorkerJobs"));
  }
  if (m.jobs().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the job file ", path, " holds no job"));
  }
  WorkerJobSet set;
  for (int i = 0; i < m.jobs_size(); ++i) {
    absl::StatusOr<WorkerJob> job = FromProto(m.jobs(i));
    if (!job.ok()) {
      if (m.jobs_size() == 1) return job.status();
      return absl::InvalidArgumentError(absl::StrCat("job ", i + 1, ": ", job.status().message()));
    }
    set.jobs.push_back(*std::move(job));
  }
  set.rounds.min_rounds = std::max(1, m.min_rounds());
  set.rounds.max_rounds = std::max(set.rounds.min_rounds, m.max_rounds());
  set.rounds.budget_s = m.budget_s() > 0 ? m.budget_s() : 60;
  set.rounds.seed = m.order_seed();
  return set;
}

}  // namespace meshtune::runtime
