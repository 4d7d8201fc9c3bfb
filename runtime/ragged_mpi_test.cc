// Ragged schedules (blocks that do not divide an extent, codegen/program.h) under mpirun:
// a few legal traces at odd extents, judged and lowered here (no translation validation),
// sent to meshtune_worker as jobs (runtime/launch/worker_job.h: the Program through its proto
// form) and run on real MPI ranks (oversubscribed on a small machine), each verified by
// the oracle on every rank. runtime/ragged_test.cc runs many more on the simulator.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "runtime/executor.h"
#include "runtime/launch/launcher.h"

namespace meshtune::runtime {
namespace {

struct Case {
  std::string name, expr, extents, mesh, trace;
  std::vector<std::string> layouts;
};

// The Program of `c`; a test failure when the trace is illegal
// or does not lower.
codegen::Program LowerOrFail(const Case& c, const std::string& dtype) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(c.expr, c.extents, dtype);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(c.mesh);
  EXPECT_TRUE(p.ok() && m.ok());
  if (!p.ok() || !m.ok()) return {};
  EXPECT_TRUE(ir::SetLayouts(c.layouts, &*p).ok());
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(c.trace);
  EXPECT_TRUE(base.ok() && t.ok());
  if (!base.ok() || !t.ok()) return {};
  absl::StatusOr<ir::Verdict> v = ir::Judge(*base, *t);
  EXPECT_TRUE(v.ok() && v->legal) << c.name;
  if (!v.ok() || !v->legal) return {};
  absl::StatusOr<codegen::Program> program = codegen::Lower(v->computation);
  EXPECT_TRUE(program.ok()) << c.name << ": " << program.status();
  return program.ok() ? *std::move(program) : codegen::Program{};
}

TEST(RaggedMpiTest, RaggedSchedulesVerifyUnderMpirun) {
  const std::vector<Case> cases = {
      {"summa, 13x11x9 on 2x2", "C[m,n] += A[m,k] * B[k,n]", "m=13,n=11,k=9", "x=2,y=2",
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 2)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko, prefetch=1)\ncommunicate(B, ko, prefetch=1)\n"
       "tensorize([mi, ni, ki], matmul)\n"},
      {"split-k reduce-scatter, an empty block", "C[m,n] = A[m,k] * B[k,n]", "m=5,n=5,k=5", "x=4",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"},
      {"all-gather rows, given layouts, 7x5x3 on 2x3",
       "C[m,n] = A[m,k] * B[k,n]",
       "m=7,n=5,k=3",
       "x=2,y=3",
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
       "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n",
       {"A=cyclic(2,2)", "C=grid(x,y)"}},
      {"ring on 3 ranks", "C[m,n] += A[m,k] * B[k,n]", "m=13,n=11,k=9", "x=3",
       "distribute([m], [mo], [mi], [x])\ndivide(n, no, ni, 3)\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, no, rotate=[mo])\n"
       "tensorize([mi, ni, k], matmul)\n"},
  };
  LaunchOptions options;
  options.timeout_s = 120;
  for (const Case& c : cases) {
    for (const char* dtype : {"f64", "f32"}) {
      RunSpec spec;
      spec.problem = ProblemSpecOf(*ir::ParseProblem(c.expr, c.extents));
      spec.program = LowerOrFail(c, dtype);
      ASSERT_NE(spec.program.body, nullptr) << c.name;
      spec.ranks = spec.program.Ranks();
      spec.reps = 1;
      const LaunchResult r = Launch(spec, options);
      EXPECT_TRUE(r.verified) << c.name << " " << dtype << ": " << r.error.value_or("");
      std::cout << c.name << " " << dtype << " on " << spec.ranks
                << " ranks: " << (r.verified ? "verified" : "not verified") << ", checksum "
                << r.checksum << ", " << r.bytes_sent_max << " B sent by the busiest rank\n";
    }
  }
}

// Candidates side by side (runtime/launch/rounds.h): two schedules and the library in one job on
// 2 ranks, timed in rounds; each verifies, and their samples pair up one a round.
TEST(RaggedMpiTest, CandidatesSideBySideTakeTheSameRounds) {
  const std::string expr = "C[m,n] += A[m,k] * B[k,n]", extents = "m=64,n=64,k=48";
  const std::vector<Case> cases = {
      {"rows", expr, extents, "x=2",
       "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(B)\nshard(C, m@x)\n"
       "tensorize([mi, n, k], matmul)\n"},
      {"split-k", expr, extents, "x=2",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"},
  };
  std::vector<RunSpec> specs;
  for (const Case& c : cases) {
    RunSpec spec;
    spec.problem = ProblemSpecOf(*ir::ParseProblem(c.expr, c.extents));
    spec.program = LowerOrFail(c, "f32");
    ASSERT_NE(spec.program.body, nullptr) << c.name;
    spec.ranks = 2;
    specs.push_back(spec);
  }
  RunSpec library = specs[0];
  library.program = {};
  library.library = LibraryGemmConfig{1, 2, 16};
  specs.push_back(library);
  RoundsOptions rounds;
  rounds.min_rounds = 6;
  rounds.max_rounds = 8;
  rounds.budget_s = 60;
  LaunchOptions options;
  options.timeout_s = 120;
  const std::vector<LaunchResult> r = LaunchRounds(specs, rounds, options);
  ASSERT_EQ(r.size(), 3u);
  for (const LaunchResult& x : r) {
    EXPECT_TRUE(x.verified) << x.error.value_or("");
    EXPECT_EQ(x.samples.size(), r[0].samples.size());  // one a round, for each
    EXPECT_GE(x.samples.size(), 6u);
    EXPECT_LE(x.samples.size(), 8u);
    EXPECT_EQ(x.seconds.size(), x.samples.size() * x.batch);
    for (double s : x.samples) EXPECT_GT(s, 0);
  }
  // A crash of one rank in the job: every candidate of it fails, with the job's account.
  specs[1].inject_fault = "crash";
  for (const LaunchResult& x : LaunchRounds(specs, rounds, options)) {
    EXPECT_FALSE(x.verified);
    ASSERT_TRUE(x.error.has_value());
  }
  // Rank counts differ: nothing starts.
  specs[1].inject_fault = "";
  specs[2].library = LibraryGemmConfig{1, 1, 16};
  specs[2].ranks = 1;
  for (const LaunchResult& x : LaunchRounds(specs, rounds, options)) {
    EXPECT_EQ(x.error, "jobs side by side need one rank count; got 2 and 1");
  }
}

}  // namespace
}  // namespace meshtune::runtime
