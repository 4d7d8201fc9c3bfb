#include "meshtune/calibrate_on_comm.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "engine/tune/machine_profile.h"
#include "runtime/launch/machine_bench.h"

namespace meshtune::internal {

std::string CalibrateOnFirstUse(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_ranks = 0;
  MPI_Comm_size(node, &node_ranks);
  MPI_Comm_free(&node);
  int measure = 0;
  if (rank == 0) {
    measure = size >= 2 && node_ranks <= engine::MaxFirstUseRanks() &&
              engine::FirstUseFromEnvironment(engine::FirstUse::kCalibrate) ==
                  engine::FirstUse::kCalibrate &&
              !engine::HasProfileFor(size);
  }
  MPI_Bcast(&measure, 1, MPI_INT, 0, comm);
  if (measure == 0) return "";
  const auto start = std::chrono::steady_clock::now();
  const v1::HardwareProfile measured = runtime::MeasureMachine(runtime::QuickMachineBench(), comm);
  if (rank != 0) return "";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  absl::StatusOr<engine::ChosenProfile> stored = engine::StoreFirstUseProfile(measured, seconds);
  if (!stored.ok()) {
    return absl::StrCat("could not store the hardware profile measured on first use: ",
                        stored.status().message());
  }
  return stored->note;
}

}  // namespace meshtune::internal
