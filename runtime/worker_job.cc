#include "runtime/worker_job.h"

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

}  // namespace

v1::WorkerJob ToProto(const WorkerJob& job) {
  v1::WorkerJob m;
  v1::Statement& s = *m.mutable_statement();
  *s.mutable_output() = AccessProto(job.problem.output);
  for (const ProblemSpec::Access& a : job.problem.operands) *s.add_operands() = AccessProto(a);
  s.set_sum(job.problem.sum);
  s.set_accumulate(job.problem.accumulate);
  for (const auto& [index, extent] : job.problem.extents) (*s.mutable_extents())[index] = extent;
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
  const v1::Statement& s = m.statement();
  job.problem.output = AccessOf(s.output());
  for (const v1::Statement::Access& a : s.operands()) job.problem.operands.push_back(AccessOf(a));
  job.problem.sum = s.sum();
  job.problem.accumulate = s.accumulate();
  for (const auto& [index, extent] : s.extents()) {
    if (extent <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("job.statement: index ", index, " has extent ", extent));
    }
    job.problem.extents[index] = extent;
  }
  if (absl::Status st = CheckAccess(job.problem.output, job.problem, "job.statement.output");
      !st.ok()) {
    return st;
  }
  if (job.problem.operands.empty()) {
    return absl::InvalidArgumentError("job.statement has no operand");
  }
  for (size_t i = 0; i < job.problem.operands.size(); ++i) {
    const std::string where = absl::StrCat("job.statement.operands[", i, "]");
    if (absl::Status st = CheckAccess(job.problem.operands[i], job.problem, where); !st.ok()) {
      return st;
    }
  }
  if (m.has_library()) {
    const v1::LibraryGemm& l = m.library();
    if (!GemmFormOf(job.problem)) {
      return absl::InvalidArgumentError("job.library: the statement is not of matmul form");
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

absl::Status WriteWorkerJob(const WorkerJob& job, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !ToProto(job).SerializeToOstream(&out) || !out.flush()) {
    return absl::InternalError(absl::StrCat("cannot write the worker's job to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkerJob> ReadWorkerJob(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read the job file ", path));
  v1::WorkerJob m;
  if (!m.ParseFromIstream(&in)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the job file ", path, " is not a meshtune.v1.WorkerJob"));
  }
  return FromProto(m);
}

}  // namespace meshtune::runtime
