// Cost-model fidelity, repeated: engine::RunFidelity (what `meshtune fidelity` runs) several
// times on one problem and mesh, each run's Spearman's rho and Kendall's tau with their 95%
// bootstrap intervals, the pairs apart beyond the noise the model orders right, the median
// relative error and the rounds' own rho, then their medians. Every time is as measured:
// the candidates side by side in rounds (--rounds at least, --reps at most). The targets of
// docs/benchmarks.md are over three runs.
//
//   bazel build -c opt //bench:fidelity_bench //runtime:meshtune_worker
//   MESHTUNE_HOME=... bazel-bin/bench/fidelity_bench [--extents m=1024,n=1024,k=1024]
//       [--mesh x=2,y=2] [--count 12] [--rounds 10] [--reps 20] [--warmup 3] [--runs 3]
//       [--profile default] [--timeout-s 300] [--print-points] [--json FILE] [--replay FILE]
//       [--round-statistic min|median]
//
// --json FILE appends each run's meshtune.v1.FidelityResult to FILE as a JSON line (what
// --replay reads).
//
// --replay FILE costs the runs of FILE (`meshtune fidelity --json` lines) again under the
// profile's numbers and prints the statistics, measuring nothing; each point's time is
// again the --round-statistic of its samples (the fastest by default). Fields of older runs
// that are gone (a pace) are ignored.
//
// The machine numbers come from the hardware profile (the built-in ones when "default" was
// never calibrated), as for `meshtune tune`.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/json.h"
#include "engine/fidelity.h"
#include "engine/rank_stats.h"
#include "engine/tune/tune_options.h"
#include "ir/statement_program.h"
#include "search/runner.h"

namespace {

std::string Stat(bool has, double v) {
  char buf[32];
  if (!has) return "-";
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// "0.912 [0.801, 0.970]": a statistic and its interval, when it has them.
std::string WithInterval(bool has, double v, bool has_interval, double low, double high) {
  if (!has || !has_interval) return Stat(has, v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f [%.3f, %.3f]", v, low, high);
  return buf;
}

// "4 of 5 right (80.0%)", or "none".
std::string Separable(const meshtune::v1::FidelityResult& r) {
  if (r.separable_pairs() == 0) return "none";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d of %d right (%.1f%%)", r.separable_agree(),
                r.separable_pairs(), 100 * r.separable_share());
  return buf;
}

// Each run's statistics as a line, and their medians over the runs at the end.
class Runs {
 public:
  // Prints "run N<how>: <what>; rho R [L, H], tau T [L, H], separable A of S right (P%),
  // median |error| E, rounds' own rho O" for `result`.
  void Add(const meshtune::v1::FidelityResult& r, const std::string& how, const std::string& what) {
    std::printf(
        "run %d%s: %s; rho %s, tau %s, separable %s, median |error| %s, rounds' own rho %s\n",
        ++runs_, how.c_str(), what.c_str(),
        WithInterval(r.has_spearman_rho(), r.spearman_rho(), r.has_spearman_rho_ci_low(),
                     r.spearman_rho_ci_low(), r.spearman_rho_ci_high())
            .c_str(),
        WithInterval(r.has_kendall_tau(), r.kendall_tau(), r.has_kendall_tau_ci_low(),
                     r.kendall_tau_ci_low(), r.kendall_tau_ci_high())
            .c_str(),
        Separable(r).c_str(),
        Stat(r.has_median_relative_error(), r.median_relative_error()).c_str(),
        Stat(r.has_round_spearman_rho(), r.round_spearman_rho()).c_str());
    if (r.has_round_spearman_rho()) round_rhos_.push_back(r.round_spearman_rho());
    if (r.has_spearman_rho()) rhos_.push_back(r.spearman_rho());
    if (r.has_kendall_tau()) taus_.push_back(r.kendall_tau());
    if (r.has_separable_share()) shares_.push_back(r.separable_share());
    if (r.has_median_relative_error()) errors_.push_back(r.median_relative_error());
  }
  void PrintMedians() const {
    auto median = [](const std::vector<double>& v) {
      return Stat(!v.empty(), meshtune::engine::Median(v));
    };
    std::printf(
        "median over runs: rho %s, tau %s, separable share %s, median |error| %s, rounds' own "
        "rho %s\n",
        median(rhos_).c_str(), median(taus_).c_str(), median(shares_).c_str(),
        median(errors_).c_str(), median(round_rhos_).c_str());
  }

 private:
  int runs_ = 0;
  std::vector<double> rhos_, taus_, shares_, errors_, round_rhos_;
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
int Replay(const std::string& path, const meshtune::cost::CostParams& params,
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
    if (!meshtune::base::FromJson(line, &measured, /*ignore_unknown_fields=*/true).ok()) {
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
  int count = 12, rounds = 10, reps = 20, warmup = 3, runs = 3;
  double timeout_s = 300;
  bool print_points = false;
  std::string replay, json;
  CLI::App app{"cost-model fidelity, repeated (see the file comment)"};
  app.add_option("--extents", extents, "index extents of C[m,n] += A[m,k] * B[k,n]");
  app.add_option("--mesh", mesh_text, "mesh axes");
  app.add_option("--count", count, "candidates a run")->check(CLI::Range(2, 1000));
  app.add_option("--rounds", rounds, "rounds at least, each a sample of every candidate")
      ->check(CLI::Range(1, 100));
  app.add_option("--reps", reps, "rounds at most (at least --rounds)")->check(CLI::Range(1, 1000));
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
                 "which sample is a candidate's time: min or median (also for --replay)")
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
  mpi.reps = rounds;  // rounds at least side by side (and the samples of a run alone)
  mpi.max_rounds = std::max(rounds, reps);
  mpi.warmup = warmup;
  auto runner = meshtune::search::NewMpiRunner(mpi);
  meshtune::engine::FidelityOptions options;
  options.count = count;
  options.timeout_s = timeout_s;
  options.round_statistic = round_statistic;
  std::printf(
      "C[m,n] += A[m,k] * B[k,n] %s on %s, profile %s: %d candidates a run, %d to %d rounds, %d "
      "runs\n",
      extents.c_str(), mesh_text.c_str(), profile.c_str(), count, rounds, std::max(rounds, reps),
      runs);
  std::ofstream json_out;
  if (!json.empty()) json_out.open(json, std::ios::app);
  Runs done;
  for (int run = 1; run <= runs; ++run) {
    const auto result = meshtune::engine::RunFidelity(meshtune::ir::ProgramOf(*problem), *mesh,
                                                      *params, options, *runner);
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
