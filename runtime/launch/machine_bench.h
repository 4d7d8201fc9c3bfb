// Machine measurements for calibration, on any communicator: message, collective, GEMM and
// memory-pass times (what each sample is: runtime/launch/calibrate_main.cc's comment). The
// meshtune_calibrate binary runs it on MPI_COMM_WORLD under mpirun; an application's plan
// runs it on its own communicator on first use (meshtune/plan.h). Thread-safe: one
// measurement at a time in a process.
#ifndef MESHTUNE_RUNTIME_LAUNCH_MACHINE_BENCH_H_
#define MESHTUNE_RUNTIME_LAUNCH_MACHINE_BENCH_H_

#include <mpi.h>

#include "proto/meshtune.pb.h"
#include "runtime/launch/machine_bench_settings.h"

namespace meshtune::runtime {

// Collective over `comm` (at least 2 ranks; settings.peer one of them): measures the
// samples `settings` asks for. On rank 0 of `comm`: a HardwareProfile holding the samples
// and how they were taken (ranks, dtype, gemm_n, host, created, cores, ranks per node, MPI
// and BLAS versions) but neither a name nor fitted numbers (storage::FitProfile fits
// them); on the other ranks an unspecified partial message.
v1::HardwareProfile MeasureMachine(const MachineBenchSettings& settings, MPI_Comm comm);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_MACHINE_BENCH_H_
