// The worker's job file: a job round-trips exactly, and a malformed one is refused with the
// part it gets wrong — the statement, the program, or the file itself.
#include "runtime/launch/worker_job.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "codegen/pipeline.h"
#include "codegen/program_proto.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"

namespace meshtune::runtime {
namespace {

// SUMMA's statement on x=2 (m split), lowered and validated.
WorkerJob Job() {
  absl::StatusOr<ir::Problem> problem =
      ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=8,n=6,k=4", "f64");
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*problem, *ir::ParseMesh("x=2"));
  absl::StatusOr<codegen::Program> program = codegen::PrepareProgram(
      *base, *ir::ParseTrace("distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n"
                             "tensorize([mi, n, k], matmul)\n"));
  EXPECT_TRUE(program.ok()) << program.status();
  WorkerJob job{ProblemSpecOf(*problem), *program, {}};
  job.options.reps = 4;
  job.options.warmup = 2;
  job.options.seed = 99;
  job.options.inject_fault = "wrong";
  return job;
}

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/" + name;
}

TEST(WorkerJobTest, AJobRoundTripsThroughItsFile) {
  const WorkerJob job = Job();
  const std::string path = TempPath("job.pb");
  WorkerJobSet set;
  set.jobs = {job, job};
  set.rounds.min_rounds = 7;
  set.rounds.max_rounds = 21;
  set.rounds.budget_s = 12.5;
  set.rounds.seed = 5;
  ASSERT_TRUE(WriteWorkerJobs(set, path).ok());
  absl::StatusOr<WorkerJobSet> read_set = ReadWorkerJobs(path);
  ASSERT_TRUE(read_set.ok()) << read_set.status();
  ASSERT_EQ(read_set->jobs.size(), 2u);
  EXPECT_EQ(read_set->rounds.min_rounds, 7);
  EXPECT_EQ(read_set->rounds.max_rounds, 21);
  EXPECT_EQ(read_set->rounds.budget_s, 12.5);
  EXPECT_EQ(read_set->rounds.seed, 5u);
  const WorkerJob* read = &read_set->jobs[1];
  EXPECT_EQ(read->problem.output.tensor, "C");
  EXPECT_EQ(read->problem.output.indices, (std::vector<std::string>{"m", "n"}));
  ASSERT_EQ(read->problem.operands.size(), 2u);
  EXPECT_EQ(read->problem.operands[1].tensor, "B");
  EXPECT_EQ(read->problem.operands[1].indices, (std::vector<std::string>{"k", "n"}));
  EXPECT_FALSE(read->problem.sum);
  EXPECT_TRUE(read->problem.accumulate);
  EXPECT_EQ(read->problem.extents, job.problem.extents);
  EXPECT_EQ(codegen::ToProto(read->program).SerializeAsString(),
            codegen::ToProto(job.program).SerializeAsString());
  EXPECT_EQ(read->options.reps, 4);
  EXPECT_EQ(read->options.warmup, 2);
  EXPECT_EQ(read->options.seed, 99u);
  EXPECT_EQ(read->options.inject_fault, "wrong");
}

TEST(WorkerJobTest, ALibraryJobRoundTripsAndIsCheckedForMatmulFormAndConfiguration) {
  WorkerJob job = Job();
  job.program = codegen::Program{};
  job.library = LibraryGemmConfig{1, 2, 16};
  job.library_dtype_bytes = 8;
  absl::StatusOr<WorkerJob> back = FromProto(ToProto(job));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->library.has_value());
  EXPECT_EQ(ConfigText(*back->library), "1x2, NB 16");
  EXPECT_EQ(back->library_dtype_bytes, 8);
  EXPECT_EQ(back->options.reps, 4);
  v1::WorkerJob bad = ToProto(job);
  bad.mutable_library()->set_nb(0);
  EXPECT_EQ(FromProto(bad).status().message(),
            "job.library: grid 1x2, NB 0, 8-byte elements is not a configuration");
  bad = ToProto(job);
  bad.mutable_statement()->set_sum(true);
  EXPECT_EQ(FromProto(bad).status().message(), "job.library: the statement is not of matmul form");
}

TEST(WorkerJobTest, AMalformedStatementIsRefusedByName) {
  const v1::WorkerJob good = ToProto(Job());
  v1::WorkerJob m = good;
  m.mutable_statement()->mutable_output()->clear_tensor();
  EXPECT_EQ(FromProto(m).status().message(), "job.statement.output names no tensor");
  m = good;
  m.mutable_statement()->mutable_operands(1)->set_indices(0, "q");
  EXPECT_EQ(FromProto(m).status().message(),
            "job.statement.operands[1] uses index q, which has no extent");
  m = good;
  (*m.mutable_statement()->mutable_extents())["k"] = 0;
  EXPECT_EQ(FromProto(m).status().message(), "job.statement: index k has extent 0");
  m = good;
  m.mutable_statement()->clear_operands();
  EXPECT_EQ(FromProto(m).status().message(), "job.statement has no operand");
}

TEST(WorkerJobTest, AMalformedProgramIsProgramProtosError) {
  v1::WorkerJob m = ToProto(Job());
  m.mutable_program()->clear_body();
  const absl::Status s = FromProto(m).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s, codegen::FromProto(m.program()).status());
}

TEST(WorkerJobTest, AMissingOrForeignFileIsRefused) {
  EXPECT_EQ(ReadWorkerJobs("/nonexistent/job.pb").status().message(),
            "cannot read the job file /nonexistent/job.pb");
  const std::string path = TempPath("not_a_job.pb");
  std::ofstream(path) << "\x0a\xff\xff\xff\xff\xff";
  EXPECT_EQ(ReadWorkerJobs(path).status().message(),
            "the job file " + path + " is not a meshtune.v1.WorkerJobs");
  const std::string empty = TempPath("no_job.pb");
  std::ofstream(empty) << "";
  EXPECT_EQ(ReadWorkerJobs(empty).status().message(), "the job file " + empty + " holds no job");
  // The second of two jobs malformed: named by its place.
  v1::WorkerJobs two;
  *two.add_jobs() = ToProto(Job());
  *two.add_jobs() = ToProto(Job());
  two.mutable_jobs(1)->mutable_statement()->mutable_output()->clear_tensor();
  const std::string bad = TempPath("bad_second.pb");
  std::ofstream(bad, std::ios::binary) << two.SerializeAsString();
  EXPECT_EQ(ReadWorkerJobs(bad).status().message(), "job 2: job.statement.output names no tensor");
}

}  // namespace
}  // namespace meshtune::runtime
