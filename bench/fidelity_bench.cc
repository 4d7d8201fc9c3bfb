// Cost-model fidelity, repeated: engine::RunFidelity (what `meshtune fidelity` runs) several
// times on one problem and mesh, each run's Spearman's rho, Kendall's tau and median relative
// error, then their medians. The targets of docs/benchmarks.md are over three runs.
//
//   bazel build -c opt //bench:fidelity_bench //runtime:meshtune_worker
//   MESHTUNE_HOME=... bazel-bin/bench/fidelity_bench [--extents m=1024,n=1024,k=1024]
//       [--mesh x=2,y=2] [--count 12] [--rounds 3] [--reps 5] [--warmup 3] [--runs 3]
//       [--profile default] [--timeout-s 300] [--print-points] [--json FILE] [--replay FILE]
//       [--round-statistic min|median]
//
// --json FILE appends each run's meshtune.v1.FidelityResult to FILE as a JSON line (what
// --replay reads).
//
// --replay FILE costs the runs of FILE (`meshtune fidelity --json` lines) again under the
// profile's numbers and prints the statistics, measuring nothing; each point's time is
// again the --round-statistic of its rounds (the fastest by default).
//
// The machine numbers come from the hardware profile (the built-in ones when "default" was
// never calibrated), as for `meshtune tune`.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/json.h"
#include "engine/fidelity.h"
#include "engine/rank_stats.h"
#include "engine/tune_options.h"
#include "search/runner.h"

namespace {

std::string Stat(bool has, double v) {
  char buf[32];
  if (!has) return "-";
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// Each run's statistics as a line, and their medians over the runs at the end.
class Runs {
 public:
  // Prints "run N<how>: <what>; rho R, tau T, median |error| E" for `result`.
  void Add(const meshtune::v1::FidelityResult& result, const std::string& how,
           const std::string& what) {
    std::printf("run %d%s: %s; rho %s, tau %s, median |error| %s, rounds' own rho %s\n", ++runs_,
                how.c_str(), what.c_str(),
                Stat(result.has_spearman_rho(), result.spearman_rho()).c_str(),
                Stat(result.has_kendall_tau(), result.kendall_tau()).c_str(),
                Stat(result.has_median_relative_error(), result.median_relative_error()).c_str(),
                Stat(result.has_round_spearman_rho(), result.round_spearman_rho()).c_str());
    if (result.has_round_spearman_rho()) round_rhos_.push_back(result.round_spearman_rho());
    if (result.has_spearman_rho()) rhos_.push_back(result.spearman_rho());
    if (result.has_kendall_tau()) taus_.push_back(result.kendall_tau());
    if (result.has_median_relative_error()) errors_.push_back(result.median_relative_error());
  }
  void PrintMedians() const {
    std::printf("median over runs: rho %.3f, tau %.3f, median |error| %.3f, rounds' own rho %s\n",
                meshtune::engine::Median(rhos_), meshtune::engine::Median(taus_),
                meshtune::engine::Median(errors_),
                Stat(!round_rhos_.empty(), meshtune::engine::Median(round_rhos_)).c_str());
  }

 private:
  int runs_ = 0;
  std::vector<double> rhos_, taus_, errors_, round_rhos_;
};

void PrintPoints(const meshtune::v1::FidelityResult& result) {
  for (int i = 0; i < result.points_size(); ++i) {
    const auto& p = result.points(i);
    std::printf("  #%lld predicted %.6g measured %s %s\n",
                static_cast<long long>(i < result.ranks_size() ? result.ranks(i) : 0),
                p.predicted_s(),
                p.verified() ? std::to_string(p.measured_s()).c_str() : p.error().c_str(),
                p.family().c_str());
  }
}

// --replay FILE: the runs of a `meshtune fidelity --json` output file (one FidelityResult a
// line) costed again under the profile's numbers, without measuring.
int Replay(const std::string& path, const meshtune::search::CostParams& params,
           meshtune::engine::RoundStatistic statistic, bool print) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fidelity_bench: cannot read %s\n", path.c_str());
    return 2;
  }
  Runs runs;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    meshtune::v1::FidelityResult measured;
    if (!meshtune::base::FromJson(line, &measured).ok()) {
      std::fprintf(stderr, "fidelity_bench: %s: a line is not a FidelityResult\n", path.c_str());
      return 2;
    }
    auto result = meshtune::engine::RecostFidelity(measured, params);
    if (!result.ok()) {
      std::fprintf(stderr, "fidelity_bench: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    meshtune::engine::ApplyRoundStatistic(statistic, &*result);
    if (print) PrintPoints(*result);
    runs.Add(*result, " (replayed)", std::to_string(result->verified()) + " verified");
  }
  runs.PrintMedians();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string extents = "m=1024,n=1024,k=1024", mesh_text = "x=2,y=2", profile = "default";
  int count = 12, rounds = 3, reps = 5, warmup = 3, runs = 3;
  double timeout_s = 300;
  bool print_points = false;
  std::string replay, json;
  CLI::App app{"cost-model fidelity, repeated (see the file comment)"};
  app.add_option("--extents", extents, "index extents of C[m,n] += A[m,k] * B[k,n]");
  app.add_option("--mesh", mesh_text, "mesh axes");
  app.add_option("--count", count, "candidates a run")->check(CLI::Range(2, 1000));
  app.add_option("--rounds", rounds, "rounds of measurement")->check(CLI::Range(1, 100));
  app.add_option("--reps", reps, "timed repetitions a measurement")->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "warm-up repetitions")->check(CLI::Range(0, 1000));
  app.add_option("--runs", runs, "fidelity runs")->check(CLI::Range(1, 100));
  app.add_option("--profile", profile, "hardware profile");
  app.add_option("--timeout-s", timeout_s, "seconds a candidate may run")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_flag("--print-points", print_points, "print every point");
  app.add_option("--json", json, "append each run's FidelityResult to FILE");
  app.add_option("--replay", replay, "cost the runs of FILE again, measuring nothing");
  std::string statistic = "min";
  app.add_option("--round-statistic", statistic,
                 "which round is a candidate's time: min or median (also for --replay)")
      ->check(CLI::IsMember({"min", "median"}));
  CLI11_PARSE(app, argc, argv);
  const auto problem = meshtune::ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
  const auto mesh = meshtune::ir::ParseMesh(mesh_text);
  const auto params = meshtune::engine::ProfileCostParams(profile);
  if (!problem.ok() || !mesh.ok() || !params.ok()) {
    std::fprintf(
        stderr, "fidelity_bench: %s\n",
        !params.ok() ? std::string(params.status().message()).c_str() : "bad --extents or --mesh");
    return 2;
  }
  const auto round_statistic = meshtune::engine::RoundStatisticNamed(statistic).value_or(
      meshtune::engine::RoundStatistic::kMin);  // CLI11 checked the name
  if (!replay.empty()) return Replay(replay, *params, round_statistic, print_points);
  meshtune::search::MpiRunnerOptions mpi;
  mpi.reps = reps;
  mpi.warmup = warmup;
  auto runner = meshtune::search::NewMpiRunner(mpi);
  meshtune::engine::FidelityOptions options;
  options.count = count;
  options.rounds = rounds;
  options.timeout_s = timeout_s;
  options.round_statistic = round_statistic;
  std::printf(
      "C[m,n] += A[m,k] * B[k,n] %s on %s, profile %s: %d candidates a run, %d rounds, %d runs\n",
      extents.c_str(), mesh_text.c_str(), profile.c_str(), count, rounds, runs);
  std::ofstream json_out;
  if (!json.empty()) json_out.open(json, std::ios::app);
  Runs done;
  for (int run = 1; run <= runs; ++run) {
    const auto result = meshtune::engine::RunFidelity(*problem, *mesh, *params, options, *runner);
    if (!result.ok()) {
      std::fprintf(stderr, "fidelity_bench: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    if (print_points) PrintPoints(*result);
    if (json_out.is_open()) json_out << meshtune::base::ToJsonLine(*result) << std::endl;
    done.Add(*result, "",
             std::to_string(result->verified()) + " of " + std::to_string(result->points_size()) +
                 " verified of " + std::to_string(result->costed()) + " costed");
  }
  done.PrintMedians();
  return 0;
}
