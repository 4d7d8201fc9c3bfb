// Replay plus legality per candidate: what the search pays for every trace it checks.
//
//   bazel run -c opt //bench:ir_bench -- --benchmark_repetitions=10 \
//       --benchmark_report_aggregates_only=true
//
// SUMMA on x=8,y=8 (m=512, n=1024, k=2048), one core. Target: at most 2 ms per candidate.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "ir/verdict.h"

namespace meshtune::ir {
namespace {

constexpr char kSumma[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 8)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@y)\n"
    "shard(B, k@x, n@y)\n"
    "shard(C, m@x, n@y)\n"
    "communicate(A, ko)\n"
    "communicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

// Base computation built once, as the search does; each iteration replays and judges.
void BM_ReplayAndLegality(benchmark::State& state) {
  const Problem p = *ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048");
  const Mesh m = *ParseMesh("x=8,y=8");
  const Computation base = *Computation::Create(p, m);
  const Trace t = *ParseTrace(kSumma);
  for (auto _ : state) {
    absl::StatusOr<Verdict> v = Judge(base, t);
    if (!v.ok() || !v->legal) state.SkipWithError("SUMMA was not judged legal");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ReplayAndLegality)->Unit(benchmark::kMicrosecond);

// Everything from text: parse problem, mesh and trace, create the base, replay, judge.
void BM_FromText(benchmark::State& state) {
  for (auto _ : state) {
    const Problem p = *ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048");
    const Computation base = *Computation::Create(p, *ParseMesh("x=8,y=8"));
    absl::StatusOr<Verdict> v = Judge(base, *ParseTrace(kSumma));
    if (!v.ok() || !v->legal) state.SkipWithError("SUMMA was not judged legal");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_FromText)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace meshtune::ir

BENCHMARK_MAIN();
