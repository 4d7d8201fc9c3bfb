// The search's speed on one core: space construction (every tensor option of every loop
// nest checked with isl), fresh candidates through lowering and costing, and the whole
// model-only tune — medians over repetitions, each from scratch (fresh isl contexts and
// caches).
//
//   bazel run -c opt //bench:search_bench -- [--reps 5] [--extents m=512,n=1024,k=2048]
//       [--mesh x=8,y=8] [--evaluate 500] [--max-evaluations 1000]
//
// --max-evaluations defaults to `meshtune tune`'s own default, so the tune timed is the
// one `meshtune tune --model-only` runs.
//
// Machine numbers are fixed (alpha 1 us, beta 1 ns/B, gamma 30 GFLOP/s) so runs compare.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "search/explorer.h"
#include "search/runner.h"
#include "search/tuner.h"

namespace {

using Clock = std::chrono::steady_clock;
using meshtune::cost::CostParams;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, evaluate = 500;
  int64_t max_evaluations = 1000;  // meshtune tune's default
  std::string extents = "m=512,n=1024,k=2048", mesh_text = "x=8,y=8";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--evaluate")) evaluate = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-evaluations")) max_evaluations = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--extents")) extents = argv[i + 1];
    if (!std::strcmp(argv[i], "--mesh")) mesh_text = argv[i + 1];
  }
  const auto problem = meshtune::ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
  const auto mesh = meshtune::ir::ParseMesh(mesh_text);
  if (!problem.ok() || !mesh.ok()) {
    std::fprintf(stderr, "bad --extents or --mesh\n");
    return 2;
  }
  CostParams params;
  params.alpha = params.alpha_coll = 1e-6;
  params.beta = params.beta_coll = 1e-9;
  params.gamma = 1.0 / 30e9;

  std::vector<double> space_s, eval_rate, tune_s, best_s;
  int64_t enumerated = 0, legal = 0, fresh = 0, evaluated = 0, by_isl = 0;
  for (int r = 0; r < reps; ++r) {
    // Space: enumerate and judge.
    Clock::time_point t0 = Clock::now();
    auto explorer = meshtune::search::Explorer::Create(*problem, {*mesh}, {}, params);
    space_s.push_back(Since(t0));
    if (!explorer.ok()) return 1;
    enumerated = (*explorer)->counts().enumerated;
    legal = (*explorer)->counts().legal;
    // Fresh candidates: random legal points, each lowered and costed once.
    std::mt19937_64 rng(r + 1);
    t0 = Clock::now();
    int n = 0;
    for (int tries = 0; n < evaluate && tries < 50 * evaluate; ++tries) {
      std::optional<meshtune::search::Point> p = (*explorer)->Sample(&rng);
      if (!p || (*explorer)->Evaluated(*p)) continue;
      (*explorer)->Evaluate(*p);
      ++n;
    }
    eval_rate.push_back(n / Since(t0));
    fresh = (*explorer)->counts().costed;
    by_isl = (*explorer)->evaluator(0).isl_lowerings();
    // The whole model-only tune.
    meshtune::search::TuneOptions o;
    o.program = meshtune::ir::ProgramOf(*problem);
    o.meshes = {*mesh};
    o.params = params;
    o.top_k = 0;
    o.max_evaluations = max_evaluations;
    auto runner = meshtune::search::NewModelOnlyRunner();
    t0 = Clock::now();
    auto result = meshtune::search::Tune(o, *runner);
    tune_s.push_back(Since(t0));
    if (!result.ok()) return 1;
    best_s.push_back(result->best.cost.seconds);
    evaluated = result->counts.evaluated;
  }
  std::printf("problem C[m,n] += A[m,k] * B[k,n], %s on %s, %d repetitions (medians)\n",
              extents.c_str(), mesh_text.c_str(), reps);
  std::printf(
      "space:    %.3f s to enumerate and judge %lld candidates (%lld legal): %.0f candidates/s\n",
      Median(space_s), static_cast<long long>(enumerated), static_cast<long long>(legal),
      enumerated / Median(space_s));
  std::printf(
      "evaluate: %.1f fresh legal candidates/s through lowering and costing (%d sampled, %lld "
      "distinct, %lld lowered by isl outside the closed forms)\n",
      Median(eval_rate), evaluate, static_cast<long long>(fresh), static_cast<long long>(by_isl));
  std::printf(
      "tune:     %.3f s for the whole model-only tune (%lld evaluations), best predicted %.6g s\n",
      Median(tune_s), static_cast<long long>(evaluated), Median(best_s));
  return 0;
}
