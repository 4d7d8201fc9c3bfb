// One meshtune schedule (typically the tuner's pick) against ScaLAPACK PSGEMM at its best
// block size and process grid, same ranks, same MPI job.
//
//   bazel build -c opt //bench:tuned_vs_psgemm
//   OPENBLAS_NUM_THREADS=1 mpirun -n 4 --oversubscribe bazel-bin/bench/tuned_vs_psgemm
//       --m 2048 --n 2048 --k 2048 --mesh x=2,y=2 --trace FILE [--reps 5]
//
// bench/tuned_vs_psgemm.sh gets the trace and mesh from `meshtune tune` and runs this.
// C[m,n] += A[m,k] * B[k,n], f32. PSGEMM runs at every block size NB in {64, ..., 1024}
// that exceeds none of m, n, k, on every prow x pcol grid of the job's ranks (2x2, 4x1 and
// 1x4 for 4 ranks); the sweep's fastest configuration, measured again in 2 * reps + 1 rounds of
// its own (the fastest of many medians is biased low), is the peer. With --answer NB=64,4x1 (the
// tune's answer when it is PSGEMM) that configuration alternates with the peer in those rounds,
// and the median of the rounds' ratios is the answer's ratio to the peer. With --layout flags (e.g.
// A=cyclic(64,64) for each of A, B and C), the schedule starts from those layouts and ends
// in C's, its redistributions timed with it (ir/layout.h); with --in-place 1 the trace is
// of the layouts' in-place form (ir::InPlaceForm), which runs on the local arrays as they are. The
// schedule is then judged, lowered and executed as psgemm_bench does. Last, one process of OpenBLAS
// with 2 threads does the whole GEMM on rank 0 while the other ranks sleep (bench/blas_peer.h).
// Every time is a median over --reps repetitions after one warm-up, a repetition's time being the
// slowest rank's. Rank 0 prints one table, the ratios tuned / best PSGEMM and tuned /
// OpenBLAS, a `summary:` line for scripts, and the schedule. Exit status 0 when
// the schedule ran and verified, 1 when it did not verify, 2 on bad flags or an illegal or
// unlowerable schedule.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/blas_peer.h"
#include "bench/psgemm.h"
#include "codegen/validate/validate.h"
#include "ir/layout.h"
#include "ir/reason.h"
#include "ir/verdict.h"
#include "runtime/mpi_executor.h"

namespace {

constexpr char kExpr[] = "C[m,n] += A[m,k] * B[k,n]";

struct Flags {
  int m = 0, n = 0, k = 0, reps = 5;
  std::string mesh, trace_file;
  std::vector<std::string> layouts;                     // --layout TENSOR=SPEC (repeatable)
  bool in_place = false;                                // --in-place 1: the layouts' in-place form
  int answer_nb = 0, answer_prow = 0, answer_pcol = 0;  // --answer NB=64,4x1 (0: none)
};

// Parses `--name value` pairs; InvalidArgument on anything else, a missing flag, or a
// dim below 64 (the smallest PSGEMM block tried).
absl::Status ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc)
      return absl::InvalidArgumentError(std::string("missing value after ") + argv[i]);
    const std::string name = argv[i], value = argv[i + 1];
    if (name == "--m")
      f->m = std::atoi(value.c_str());
    else if (name == "--n")
      f->n = std::atoi(value.c_str());
    else if (name == "--k")
      f->k = std::atoi(value.c_str());
    else if (name == "--reps")
      f->reps = std::atoi(value.c_str());
    else if (name == "--mesh")
      f->mesh = value;
    else if (name == "--trace")
      f->trace_file = value;
    else if (name == "--layout")
      f->layouts.push_back(value);
    else if (name == "--in-place")
      f->in_place = value == "1";
    else if (name == "--answer") {
      char rest = 0;
      if (std::sscanf(value.c_str(), "NB=%d,%dx%d%c", &f->answer_nb, &f->answer_prow,
                      &f->answer_pcol, &rest) != 3 ||
          f->answer_nb < 1 || f->answer_prow < 1 || f->answer_pcol < 1)
        return absl::InvalidArgumentError("--answer takes NB=64,4x1 (block size, grid), not " +
                                          value);
    } else
      return absl::InvalidArgumentError("unknown flag " + name);
  }
  if (f->m < 64 || f->n < 64 || f->k < 64 || f->reps < 1 || f->mesh.empty() ||
      f->trace_file.empty()) {
    return absl::InvalidArgumentError(
        "usage: tuned_vs_psgemm --m M --n N --k K --mesh x=2,y=2 --trace FILE [--reps 5] "
        "[--layout TENSOR=SPEC ...] [--answer NB=64,4x1]  (M, N, K >= 64)");
  }
  return absl::OkStatus();
}

// The schedule in `flags` judged and lowered for the problem, or why it cannot be. Deterministic,
// so every rank reaches the same outcome.
absl::StatusOr<meshtune::codegen::Program> LowerSchedule(const Flags& flags,
                                                         std::string* trace_text) {
  std::ifstream in(flags.trace_file);
  if (!in) return absl::NotFoundError("cannot read " + flags.trace_file);
  std::stringstream text;
  text << in.rdbuf();
  const std::string extents = "m=" + std::to_string(flags.m) + ",n=" + std::to_string(flags.n) +
                              ",k=" + std::to_string(flags.k);
  auto problem = meshtune::ir::ParseProblem(kExpr, extents);
  if (!problem.ok()) return problem.status();
  if (absl::Status s = meshtune::ir::SetLayouts(flags.layouts, &*problem); !s.ok()) return s;
  const auto mesh = meshtune::ir::ParseMesh(flags.mesh);
  if (!mesh.ok()) return mesh.status();
  if (flags.in_place) problem = meshtune::ir::InPlaceForm(*problem, *mesh);
  if (!problem.ok()) return problem.status();
  const auto trace = meshtune::ir::ParseTrace(text.str());
  if (!trace.ok()) return trace.status();
  *trace_text = trace->ToString();
  const auto base = meshtune::ir::Computation::Create(*problem, *mesh);
  if (!base.ok()) return base.status();
  const auto verdict = meshtune::ir::Judge(*base, *trace);
  if (!verdict.ok()) return verdict.status();
  if (!verdict->legal) return meshtune::ir::IllegalSchedule(verdict->reasons[0]);
  return meshtune::codegen::LowerValidated(verdict->computation);
}

double Gflops(const Flags& f, double seconds) { return 2.0 * f.m * f.n * f.k / seconds / 1e9; }

struct Config {
  int nb, prow, pcol;
  double seconds;
};

// "PSGEMM NB=64 grid 4x1".
std::string ConfigName(int nb, int prow, int pcol) {
  return "PSGEMM NB=" + std::to_string(nb) + " grid " + std::to_string(prow) + "x" +
         std::to_string(pcol);
}

// The final of PSGEMM: the sweep's fastest configuration and the answer's (when the tune's
// answer is PSGEMM at another one), measured again in `rounds` rounds that alternate them.
// The fastest of many medians is an estimate biased low (the noisiest configuration tends
// to win the sweep), so the peer's time and the answer's ratio come from these rounds, not
// from the sweep.
struct Final {
  Config best;              // the finalist with the lower median over the rounds
  double answer_s = 0;      // the answer's median over the rounds (0: no --answer)
  double answer_ratio = 0;  // median over rounds of answer / best (0: no --answer)
  int rounds = 0;
};

Final PsgemmFinal(const Flags& f, const Config& sweep_best, int rounds) {
  std::vector<Config> finalists = {sweep_best};
  if (f.answer_nb > 0 && (f.answer_nb != sweep_best.nb || f.answer_prow != sweep_best.prow ||
                          f.answer_pcol != sweep_best.pcol)) {
    finalists.push_back({f.answer_nb, f.answer_prow, f.answer_pcol, 0});
  }
  std::vector<std::vector<double>> times(finalists.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < finalists.size(); ++i) {
      const Config& c = finalists[i];
      times[i].push_back(
          meshtune::bench::PsgemmSeconds(f.m, f.n, f.k, c.nb, c.prow, c.pcol, /*reps=*/1));
    }
  }
  for (size_t i = 0; i < finalists.size(); ++i) {
    finalists[i].seconds = meshtune::bench::Median(times[i]);
  }
  Final out;
  out.rounds = rounds;
  const size_t best = finalists.size() > 1 && finalists[1].seconds < finalists[0].seconds ? 1 : 0;
  out.best = finalists[best];
  if (f.answer_nb > 0) {
    const size_t answer = finalists.size() - 1;
    out.answer_s = finalists[answer].seconds;
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) ratios.push_back(times[answer][r] / times[best][r]);
    out.answer_ratio = meshtune::bench::Median(ratios);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Flags flags;
  std::string trace_text;
  const absl::Status parsed = ParseFlags(argc, argv, &flags);
  absl::StatusOr<meshtune::codegen::Program> program =
      parsed.ok() ? LowerSchedule(flags, &trace_text) : parsed;
  if (program.ok() && program->Ranks() > size) {
    program = absl::InvalidArgumentError("the mesh has " + std::to_string(program->Ranks()) +
                                         " ranks, the job only " + std::to_string(size));
  }
  if (!program.ok()) {
    if (rank == 0)
      std::fprintf(stderr, "tuned_vs_psgemm: %s\n",
                   std::string(program.status().message()).c_str());
    MPI_Finalize();
    return 2;
  }

  if (rank == 0) {
    std::printf("%s  m=%d n=%d k=%d  f32  %d ranks  median of %d\n\n", kExpr, flags.m, flags.n,
                flags.k, size, flags.reps);
    std::fflush(stdout);
  }
  if (flags.answer_nb > 0 && flags.answer_prow * flags.answer_pcol != size) {
    if (rank == 0)
      std::fprintf(stderr, "tuned_vs_psgemm: --answer's grid %dx%d is not of the job's %d ranks\n",
                   flags.answer_prow, flags.answer_pcol, size);
    MPI_Finalize();
    return 2;
  }
  std::vector<Config> configs;
  std::vector<std::pair<int, int>> grids;  // every prow x pcol = size, squarest first
  for (int prow = 1; prow <= size; ++prow) {
    if (size % prow == 0) grids.push_back({prow, size / prow});
  }
  std::stable_sort(grids.begin(), grids.end(), [](const auto& a, const auto& b) {
    return std::abs(a.first - a.second) < std::abs(b.first - b.second);
  });
  for (const auto& [prow, pcol] : grids) {
    for (int nb : {64, 128, 256, 512, 1024}) {
      if (nb > flags.m || nb > flags.n || nb > flags.k) continue;
      configs.push_back(
          {nb, prow, pcol,
           meshtune::bench::PsgemmSeconds(flags.m, flags.n, flags.k, nb, prow, pcol, flags.reps)});
    }
  }
  const Config* sweep_best = &configs[0];
  for (const Config& c : configs) {
    if (c.seconds < sweep_best->seconds) sweep_best = &c;
  }
  const Final final = PsgemmFinal(flags, *sweep_best, 2 * flags.reps + 1);
  const Config* best = &final.best;

  meshtune::runtime::ExecOptions options;
  options.reps = flags.reps;
  // A mesh of fewer ranks than the job (a tune with --allow-idle-ranks) runs on the first
  // ranks; the others wait without taking the cores.
  const bool active = rank < program->Ranks();
  MPI_Comm mesh_comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, active ? 0 : MPI_UNDEFINED, rank, &mesh_comm);
  meshtune::runtime::RunStats run;
  if (active) {
    const std::string extents = "m=" + std::to_string(flags.m) + ",n=" + std::to_string(flags.n) +
                                ",k=" + std::to_string(flags.k);
    run = meshtune::runtime::Execute(
        meshtune::runtime::ProblemSpecOf(*meshtune::ir::ParseProblem(kExpr, extents)), *program,
        mesh_comm, options);
    MPI_Comm_free(&mesh_comm);
  }
  meshtune::bench::SleepyBarrier(MPI_COMM_WORLD);
  const double tuned = meshtune::bench::Median(run.seconds);
  const double openblas =
      meshtune::bench::OpenBlasSeconds(MPI_COMM_WORLD, flags.m, flags.n, flags.k, 2, flags.reps);

  if (rank == 0) {
    if (program->Ranks() < size)
      std::printf("the tuned mesh uses %d of the %d ranks; the others wait\n\n",
                  static_cast<int>(program->Ranks()), size);
    std::printf("%-28s %10s %9s %8s\n", "config", "median_s", "GFLOP/s", "/best");
    for (const Config& c : configs) {
      std::printf("%-28s %10.4f %9.2f %8.3f\n", ConfigName(c.nb, c.prow, c.pcol).c_str(), c.seconds,
                  Gflops(flags, c.seconds), c.seconds / best->seconds);
    }
    std::printf("%-28s %10.4f %9.2f %8.3f  (again, %d rounds)\n",
                ConfigName(best->nb, best->prow, best->pcol).c_str(), best->seconds,
                Gflops(flags, best->seconds), 1.0, final.rounds);
    if (final.answer_s > 0)
      std::printf("%-28s %10.4f %9.2f %8.3f  (the answer, alternating with it)\n",
                  ConfigName(flags.answer_nb, flags.answer_prow, flags.answer_pcol).c_str(),
                  final.answer_s, Gflops(flags, final.answer_s), final.answer_ratio);
    std::printf("%-28s %10.4f %9.2f %8.3f\n", ("tuned, mesh " + flags.mesh).c_str(), tuned,
                Gflops(flags, tuned), tuned / best->seconds);
    std::printf("\nbest PSGEMM: NB=%d grid %dx%d, %.4f s\n", best->nb, best->prow, best->pcol,
                best->seconds);
    std::printf("tuned: %.4f s (rank kernel time %.4f s), verified %s%s%s\n", tuned,
                meshtune::bench::Median(run.kernel_seconds), run.verified ? "yes" : "NO",
                run.error.empty() ? "" : ": ", run.error.c_str());
    std::printf("ratio tuned / best PSGEMM: %.3f\n", tuned / best->seconds);
    std::printf("OpenBLAS, one process, 2 threads: %.4f s; ratio tuned / OpenBLAS: %.3f\n",
                openblas, tuned / openblas);
    std::printf(
        "summary: tuned %.6f best_psgemm %.6f openblas2 %.6f psgemm_config NB=%d,%dx%d "
        "verified %d copied %lld sweep_best %.6f answer_psgemm %.6f answer_ratio %.6f\n",
        tuned, best->seconds, openblas, best->nb, best->prow, best->pcol, run.verified ? 1 : 0,
        static_cast<long long>(run.bytes_copied_max), sweep_best->seconds, final.answer_s,
        final.answer_ratio);
    std::printf("\ntrace (mesh %s):\n%s", flags.mesh.c_str(), trace_text.c_str());
    std::printf("transfers:\n");
    for (const auto& t : meshtune::codegen::Summarize(*program)) {
      std::printf("  %s@%s %s x%lld, %lld bytes per rank\n", t.tensor.c_str(), t.loop.c_str(),
                  t.pattern.ToString().c_str(), static_cast<long long>(t.instances),
                  static_cast<long long>(t.bytes_per_rank));
    }
  }
  MPI_Finalize();
  return run.verified || !active ? 0 : 1;
}
