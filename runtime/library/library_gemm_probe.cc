// library_gemm_probe: RunLibraryGemm over a whole space of small problems of matmul form,
// under `mpirun -n P` (//runtime:library_gemm_mpi_test runs it): every transpose of A and
// B, '=' and '+=', f32 and f64, odd extents and blocks that do not divide them, on every
// process grid of 1 to P ranks (the first prow * pcol ranks of the job; the others wait).
// Rank 0 prints one line a case, "CASE: ok" or "CASE: ERROR", and a last line "cases N";
// with --plant, each square case also runs with A's transpose flag flipped and must fail
// ("CASE planted: caught" or "CASE planted: MISSED").
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/problem.h"
#include "runtime/executor.h"
#include "runtime/library/library_gemm.h"

namespace {

struct Shape {
  const char* expr;
  const char* extents;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bool plant = argc > 1 && std::strcmp(argv[1], "--plant") == 0;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::vector<Shape> shapes = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=7,n=5,k=3"}, {"C[m,n] = A[k,m] * B[k,n]", "m=13,n=11,k=9"},
      {"C[m,n] = A[m,k] * B[n,k]", "m=5,n=9,k=17"}, {"C[i,j] += A[k,i] * B[j,k]", "i=6,j=6,k=6"},
      {"C[m,n] = B[k,n] * A[m,k]", "m=1,n=1,k=1"},  {"C[m,n] += A[m,k] * B[k,n]", "m=33,n=2,k=65"},
  };
  int cases = 0, failed = 0;
  for (const Shape& shape : shapes) {
    for (const char* dtype : {"f32", "f64"}) {
      const absl::StatusOr<meshtune::ir::Problem> problem =
          meshtune::ir::ParseProblem(shape.expr, shape.extents, dtype);
      if (!problem.ok()) {
        if (rank == 0)
          std::printf("%s: cannot parse: %s\n", shape.expr,
                      std::string(problem.status().message()).c_str());
        ++failed;
        continue;
      }
      const int bytes = problem->dtype == meshtune::ir::DType::kF64 ? 8 : 4;
      const meshtune::runtime::ProblemSpec spec = meshtune::runtime::ProblemSpecOf(*problem);
      const std::optional<meshtune::runtime::GemmForm> form = meshtune::runtime::GemmFormOf(spec);
      if (!form) {
        if (rank == 0) std::printf("%s: not of matmul form\n", shape.expr);
        ++failed;
        continue;
      }
      for (int ranks = 1; ranks <= size; ++ranks) {
        MPI_Comm grid;
        MPI_Comm_split(MPI_COMM_WORLD, rank < ranks ? 0 : MPI_UNDEFINED, rank, &grid);
        for (int prow = 1; prow <= ranks; ++prow) {
          if (ranks % prow != 0) continue;
          for (int nb : {1, 2, 4, 64}) {
            const meshtune::runtime::LibraryGemmConfig config{prow, ranks / prow, nb};
            const std::string name = absl::StrCat(shape.expr, " (", shape.extents, ", ", dtype,
                                                  ") on ", prow, "x", ranks / prow, " NB ", nb);
            std::string error;
            if (grid != MPI_COMM_NULL) {
              error = meshtune::runtime::RunLibraryGemm(spec, *form, bytes, config, 1, 0, 7, grid)
                          .error;
            }
            ++cases;
            if (!error.empty()) ++failed;
            if (rank == 0) {
              std::printf("%s: %s\n", name.c_str(),
                          error.empty() ? "ok" : ("ERROR " + error).c_str());
            }
            if (plant && form->m == form->k && form->m > 1 && grid != MPI_COMM_NULL) {
              meshtune::runtime::GemmForm wrong = *form;
              wrong.a_transposed = !wrong.a_transposed;
              const std::string caught =
                  meshtune::runtime::RunLibraryGemm(spec, wrong, bytes, config, 1, 0, 7, grid)
                      .error;
              if (rank == 0) {
                std::printf("%s planted: %s\n", name.c_str(),
                            caught.empty() ? "MISSED" : ("caught " + caught).c_str());
              }
            }
            MPI_Barrier(MPI_COMM_WORLD);
          }
        }
        if (grid != MPI_COMM_NULL) MPI_Comm_free(&grid);
      }
    }
  }
  if (rank == 0) std::printf("cases %d failed %d\n", cases, failed);
  MPI_Finalize();
  return 0;
}
