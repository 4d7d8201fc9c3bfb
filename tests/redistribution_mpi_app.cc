// Redistribution plans run under MPI: on the mesh --mesh (its ranks the job's), every pair
// of the test distributions (tests/redistribution_cases.h) of several matrices is planned
// by every rank, run with runtime::Redistribute over MpiComm (Comm::Alltoallv), and each
// rank's target storage compared with what it must hold. Rank 0 prints
// "redistributed P plans on R ranks: N wrong" and the job exits 1 when N > 0.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/mpi_comm.h"
#include "runtime/redistribution.h"
#include "tests/redistribution_cases.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string mesh_text = "x=2,y=2";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--mesh") == 0) mesh_text = argv[i + 1];
  }
  const absl::StatusOr<meshtune::ir::Mesh> mesh = meshtune::ir::ParseMesh(mesh_text);
  if (!mesh.ok() || mesh->Ranks() != size) {
    if (rank == 0)
      std::fprintf(stderr, "--mesh %s does not fit %d ranks\n", mesh_text.c_str(), size);
    MPI_Finalize();
    return 2;
  }
  std::vector<int64_t> sizes;
  for (const meshtune::ir::MeshAxis& a : mesh->axes) sizes.push_back(a.size);
  std::unique_ptr<meshtune::runtime::Comm> comm =
      meshtune::runtime::NewMpiComm(MPI_COMM_WORLD, sizes);
  long long plans = 0, wrong = 0;
  for (int64_t m : {1, 5, 9}) {
    for (int64_t n : {2, 7}) {
      const std::vector<meshtune::testing::Named> all =
          meshtune::testing::Distributions(m, n, *mesh);
      for (const auto& from : all) {
        for (const auto& to : all) {
          int collisions = 0;
          const meshtune::testing::Locals a =
              meshtune::testing::Fill(*from.d, size, n, &collisions);
          const meshtune::testing::Locals want =
              meshtune::testing::Fill(*to.d, size, n, &collisions);
          const absl::StatusOr<std::vector<meshtune::runtime::Piece>> plan =
              meshtune::runtime::PlanRedistribution(*from.d, *to.d);
          if (!plan.ok() || collisions > 0) {
            ++wrong;
            continue;
          }
          std::vector<double> got(want[rank].size(), -1);
          meshtune::runtime::Redistribute<double>(*plan, a[rank].data(), got.data(), *comm);
          if (got != want[rank]) {
            ++wrong;
            std::fprintf(stderr, "rank %d: %lldx%lld %s -> %s wrong\n", rank,
                         static_cast<long long>(m), static_cast<long long>(n), from.name.c_str(),
                         to.name.c_str());
          }
          ++plans;
        }
      }
    }
  }
  long long total = 0;
  MPI_Reduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("redistributed %lld plans on %d ranks: %lld wrong\n", plans, size, total);
  MPI_Bcast(&total, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  comm.reset();
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
