// Ragged schedules (blocks that do not divide an extent, codegen/program.h) under mpirun:
// a few legal traces at odd extents, judged and lowered here (no translation validation),
// sent to meshtune_worker as jobs (runtime/worker_job.h: the Program through its proto
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
#include "runtime/launcher.h"

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

}  // namespace
}  // namespace meshtune::runtime
