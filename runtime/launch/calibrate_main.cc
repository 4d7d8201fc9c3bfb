// meshtune_calibrate: measures the message and GEMM times of the machine it runs on
// (runtime/launch/machine_bench.h on MPI_COMM_WORLD). mpirun starts P >= 2 of these; rank 0 prints
// one JSON line, a meshtune.v1.HardwareProfile in protobuf's JSON mapping holding the samples and
// how they were taken (ranks, dtype, gemm_n, host, created) but neither a name nor the fitted
// numbers: `meshtune calibrate` fits alpha, beta, alpha_coll, beta_coll and gamma to the samples
// (storage/calibration_fit.h) and stores the profile.
//
//   ping-pong  ranks 0 and 1 (0 and --peer), sizes 8 B .. --max-bytes (doubling); sample
//              "pingpong": one-way time = median round trip / 2. The other ranks sleep.
//              With --link-only this alone is measured: the link between rank 0 and
//              --peer (the first rank of another node, under a hostfile), which
//              `meshtune calibrate --hostfile` fits and stores as the profile's inter_node.
//   shift      every rank at once sends the same sizes to rank + 1 and receives from
//              rank - 1 (MPI_Sendrecv), as a schedule's ring steps and point-to-point
//              fetches do; sample "shift": the median over repetitions of the slowest
//              rank's time. Contention for memory bandwidth and, on an oversubscribed
//              machine, for cores is in it; the point-to-point alpha and beta come from it.
//   broadcast  MPI_Bcast from rank 0 over all P ranks, same sizes; sample "bcast": the
//              median over repetitions of the slowest rank's time.
//   GEMM       one n x n x n sgemm (f32) or dgemm (f64) through OpenBLAS on every rank at
//              once, so that the rate includes the sharing of cores; sample "gemm" (bytes:
//              its three operands): the median over repetitions of the slowest rank's time.
//   overlap    every rank at once, in turn: a GEMM of a size whose time is near the
//              largest ring exchange's ("overlap_gemm", bytes: its three operands), that
//              exchange alone ("overlap_shift", bytes: the message), and the exchange
//              started (MPI_Isend / MPI_Irecv) while the GEMM runs in row chunks with
//              MPI_Iprobe between them, then waited for, as the runtime runs a prefetched
//              step ("overlap_both"). Medians of the slowest rank's times.
//
//   collectives  per group size g (2, 4, 8, ... and P), the ranks split into groups of g
//              consecutive ranks (the rest idle), every group at once: MPI_Bcast,
//              MPI_Reduce (sum), MPI_Allgather, MPI_Reduce_scatter_block (sum),
//              MPI_Allreduce (sum) and MPI_Alltoall on boxes of 8 B .. --max-bytes (every
//              fourth size); samples "coll_bcast", "coll_reduce", "coll_allgather",
//              "coll_reduce_scatter", "coll_allreduce", "coll_alltoall" (bytes: the whole
//              box, a rank's send buffer for the all-to-all; group: g);
//              then their nonblocking forms (MPI_Ibcast, ...) started and at once waited
//              for, "coll_ibcast" ... "coll_iallreduce": medians of the slowest rank's times.
//   GEMM tiles one m x n x k GEMM (C += A B) for every m, n, k of --tile-grid, repeated
//              until it has run at least --tile-ms, on as many ranks of each node at once as
//              it has cores (the others sleep: a rank with a core to itself); sample
//              "gemm_tile": the slowest rank's seconds per call, the median of 5 such runs.
//   memory     every rank at once: a box of half the columns of a row-major matrix packed
//              into a dense buffer ("copy"), a buffer added into another ("add"), and a
//              column-major matrix of 1024 rows copied row by row into a dense buffer
//              ("gather": the strided reads and writes of a redistribution from or into a
//              ScaLAPACK local matrix), at 256 KiB .. 16 MiB; medians of the slowest rank's
//              times.
//
// The profile also records rank 0's node: its online cores and how many of the job's ranks
// share it, which tell how much the GEMM's ranks shared cores; and the MPI library's
// version and OpenBLAS's configuration, for the machine fingerprint.
//
// Cold caches: before each timed repetition of the shift, broadcast, overlap, collectives
// and memory passes, each node writes --flush-mib MiB (CacheFlush, FlushBytes; none on a
// node with more ranks than cores), as the kernels between a schedule's transfers sweep
// the caches.
//
// Every measurement is a median over --reps (--gemm-reps) repetitions after a warm-up. Bad
// flags or fewer than 2 ranks: a message on stderr and exit status 2. A rank dies with its
// launcher (PR_SET_PDEATHSIG).#include <mpi.h>
#include <sys/prctl.h>

#include <csignal>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "base/json.h"
#include "proto/meshtune.pb.h"
#include "runtime/launch/machine_bench.h"

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  meshtune::runtime::MachineBenchSettings f;
  std::string job_id;
  CLI::App app{
      "meshtune_calibrate: message and GEMM times of this machine (run under mpirun, P >= 2)"};
  app.add_option("--dtype", f.dtype, "GEMM element type")->check(CLI::IsMember({"f32", "f64"}));
  app.add_option("--max-bytes", f.max_bytes, "largest message")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 30));
  app.add_option("--reps", f.reps, "timed repetitions per message size")
      ->check(CLI::Range(1, 100000));
  app.add_option("--gemm-n", f.gemm_n, "GEMM size n (n x n x n)")->check(CLI::Range(16, 4096));
  app.add_option("--gemm-reps", f.gemm_reps, "timed GEMMs")->check(CLI::Range(1, 1000));
  app.add_option("--tile-grid", f.tile_grid,
                 "GEMM tile sizes: every m, n, k of them is timed (ascending, 1 to 4096)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  app.add_option("--tile-ms", f.tile_ms, "least milliseconds of each GEMM tile's timed run")
      ->check(CLI::Range(0.01, 10000.0));
  app.add_option("--flush-mib", f.flush_mib,
                 "MiB a node writes before each timed transfer or memory pass, to time them "
                 "from cold caches as a schedule runs them (default: twice the last-level "
                 "cache; 0: warm caches; none on a node with more ranks than cores)")
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("--peer", f.peer, "the rank the ping-pong pairs with rank 0 (default 1)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--link-only", f.link_only,
               "time only the ping-pong between rank 0 and --peer (the link between nodes)");
  app.add_option("--job-id", job_id, "ignored; names the job on the command line for the launcher");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {  // --help too: printed, exit status 0
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return code == 0 ? 0 : 2;
  }
  if (size < 2 || f.peer >= size) {
    if (rank == 0) {
      std::cerr << "meshtune_calibrate: "
                << (size < 2 ? "calibration needs at least 2 ranks, got "
                             : "--peer names no rank of the job: it has ")
                << size << std::endl;
    }
    MPI_Finalize();
    return 2;
  }
  const meshtune::v1::HardwareProfile profile =
      meshtune::runtime::MeasureMachine(f, MPI_COMM_WORLD);
  if (rank == 0) {
    std::cout << meshtune::base::ToJsonLine(profile) << std::endl;
  }
  MPI_Finalize();
  return 0;
}
