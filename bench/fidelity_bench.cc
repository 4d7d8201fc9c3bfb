// Cost-model fidelity: Spearman rank correlation of predicted against measured seconds.
//
//   bazel build -c opt //bench:fidelity_bench //runtime:meshtune_worker
//   MESHTUNE_HOME=... bazel-bin/bench/fidelity_bench [--extents m=1024,n=1024,k=1024]
//       [--mesh x=2,y=2] [--count 12] [--reps 3] [--profile default] [--timeout-s 300]
//       [--print-traces]
//
// Searches the space of C[m,n] += A[m,k] * B[k,n] on the mesh with the hardware profile's
// numbers (as `meshtune tune --model-only` does), then measures `count` candidates spread
// evenly over the model's ranking (best to worst) under mpirun with the MPI runner, and
// prints each (predicted, measured) pair and Spearman's rho over the verified ones (ties
// get their average rank). A spread sample, not the top K: the top of the ranking holds
// near-ties that say little about the model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "search/explorer.h"
#include "search/runner.h"
#include "search/strategy.h"
#include "storage/hardware_profile.h"

namespace {

// Ranks of `v` (1-based), ties sharing their average rank.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return rank;
}

// Spearman's rho: Pearson correlation of the ranks.
double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> rx = Ranks(x), ry = Ranks(y);
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += rx[i] / n;
    my += ry[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

int main(int argc, char** argv) {
  std::string extents = "m=1024,n=1024,k=1024", mesh_text = "x=2,y=2", profile_name = "default";
  int count = 12, reps = 3;
  double timeout_s = 300;
  bool print_traces = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--print-traces")) {
      print_traces = true;
      continue;
    }
    if (i + 1 == argc) break;
    if (!std::strcmp(argv[i], "--extents")) extents = argv[i + 1];
    if (!std::strcmp(argv[i], "--mesh")) mesh_text = argv[i + 1];
    if (!std::strcmp(argv[i], "--count")) count = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--profile")) profile_name = argv[i + 1];
    if (!std::strcmp(argv[i], "--timeout-s")) timeout_s = std::atof(argv[i + 1]);
    ++i;
  }
  const auto problem = meshtune::ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
  const auto mesh = meshtune::ir::ParseMesh(mesh_text);
  const auto profile = meshtune::storage::LoadProfile(profile_name);
  if (!problem.ok() || !mesh.ok() || !profile.ok()) {
    std::fprintf(stderr, "fidelity_bench: %s\n",
                 !profile.ok() ? std::string(profile.status().message()).c_str()
                               : "bad --extents or --mesh");
    return 2;
  }
  const meshtune::search::CostParams params = meshtune::storage::ToCostParams(*profile);
  auto explorer = meshtune::search::Explorer::Create(*problem, {*mesh}, {}, params);
  if (!explorer.ok()) return 1;
  meshtune::search::SearchBudget budget;
  meshtune::search::NewDefaultStrategy(**explorer, 4000, {})->Search(**explorer, budget);
  const std::vector<const meshtune::search::Candidate*> ranked =
      (*explorer)->Best((*explorer)->candidates().size());
  std::printf("%zu candidates costed; measuring %d spread over the ranking (profile %s)\n\n",
              ranked.size(), count, profile_name.c_str());
  std::printf("%5s %12s %12s  %s\n", "rank", "predicted_s", "measured_s", "transfers");
  meshtune::search::MpiRunnerOptions mpi;
  mpi.reps = reps;
  auto runner = meshtune::search::NewMpiRunner(mpi);
  std::vector<double> predicted, measured;
  for (int i = 0; i < count && !ranked.empty(); ++i) {
    const size_t at = count == 1 ? 0 : i * (ranked.size() - 1) / (count - 1);
    const meshtune::search::Candidate& c = *ranked[at];
    meshtune::search::MeasureInput in;
    in.problem = &*problem;
    in.mesh = &*mesh;
    in.trace = c.trace;
    in.timeout_s = timeout_s;
    const meshtune::search::CandidateRun r = runner->Run(in);
    std::string transfers;
    for (const std::string& p : c.patterns) transfers += (transfers.empty() ? "" : "; ") + p;
    std::printf("%5zu %12.6f %12s  %s\n", at + 1, c.cost.seconds,
                r.seconds ? std::to_string(*r.seconds).c_str()
                          : ("failed: " + r.error.value_or("?")).c_str(),
                transfers.empty() ? "none" : transfers.c_str());
    if (!r.verified || print_traces)
      std::printf("%s", c.trace.c_str());  // a failure's schedule, for a report
    if (r.verified && r.seconds) {
      predicted.push_back(c.cost.seconds);
      measured.push_back(*r.seconds);
    }
  }
  if (predicted.size() >= 2) {
    std::printf("\nSpearman rho over %zu verified candidates: %.3f\n", predicted.size(),
                Spearman(predicted, measured));
  }
  return 0;
}
