// library_gemm_probe: RunLibraryGemm over a whole space of small problems of matmul form,
// under `mpirun -n P` (//runtime:library_gemm_mpi_test runs it): every transpose of A and
// B, '=' and '+=', f32 and f64, odd extents and blocks that do not divide them, on every
// process grid of 1 to P ranks (the first prow * pcol ranks of the job; the others wait).
// Then RunLibraryChain over programs of two and three statements of matmul form (an
// intermediate read as it lies, read transposed, a '+=' output), f32 and f64, on the same
// grids at block sizes 2 and 64. Rank 0 prints one line a case, "CASE: ok" or "CASE: ERROR",
// and a last line "cases N failed F"; with --plant, each square case also runs with A's
// transpose flag flipped and must fail ("CASE planted: caught" or "CASE planted: MISSED"),
// and each chain whose last B is square with that B's flag flipped ("caught statement 2: ...").
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "runtime/executor.h"
#include "runtime/library/library_run.h"

namespace {

struct Shape {
  const char* expr;
  const char* extents;
};

// Runs `run` on every grid of 1 to `size` ranks (the first ranks of the job; the others
// wait) at each of `blocks`: `run(config, grid)` on the grid's ranks, MPI_COMM_NULL on the
// others.
template <typename Run>
void OnEveryGrid(int size, const std::vector<int>& blocks, const Run& run) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int ranks = 1; ranks <= size; ++ranks) {
    MPI_Comm grid;
    MPI_Comm_split(MPI_COMM_WORLD, rank < ranks ? 0 : MPI_UNDEFINED, rank, &grid);
    for (int prow = 1; prow <= ranks; ++prow) {
      if (ranks % prow != 0) continue;
      for (int nb : blocks) {
        run(meshtune::runtime::LibraryGemmConfig{prow, ranks / prow, nb}, grid);
        MPI_Barrier(MPI_COMM_WORLD);
      }
    }
    if (grid != MPI_COMM_NULL) MPI_Comm_free(&grid);
  }
}

// The chains of programs of matmul form, as the header says; adds to `cases` and `failed`.
void RunChains(int size, bool plant, int* cases, int* failed) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<Shape> programs = {
      {"H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=7,d=5,f=4,e=4"},
      {"T[m,n] = A[m,k] * B[k,n]; D[n,p] = T[m,n] * E[m,p]", "m=9,n=4,k=5,p=6"},
      {"H[b,f] = X[b,d] * W1[d,f]; G[b,e] = H[b,f] * W2[f,e]; Y[b,g] += G[b,e] * W3[e,g]",
       "b=5,d=3,f=4,e=6,g=2"},
  };
  for (const Shape& shape : programs) {
    for (const char* dtype : {"f32", "f64"}) {
      const auto program = meshtune::ir::ParseStatementProgram(shape.expr, shape.extents, dtype);
      if (!program.ok()) {
        if (rank == 0) std::printf("%s: cannot parse\n", shape.expr);
        ++*failed;
        continue;
      }
      std::vector<meshtune::runtime::ProblemSpec> specs;
      for (const meshtune::ir::Problem& p : program->statements)
        specs.push_back(meshtune::runtime::ProblemSpecOf(p));
      const auto forms = meshtune::runtime::GemmChainOf(specs);
      if (!forms.ok()) {
        if (rank == 0) std::printf("%s: not of matmul form\n", shape.expr);
        ++*failed;
        continue;
      }
      const int bytes = std::strcmp(dtype, "f64") == 0 ? 8 : 4;
      OnEveryGrid(size, {2, 64}, [&](const meshtune::runtime::LibraryGemmConfig& c, MPI_Comm grid) {
        const std::string name = absl::StrCat(shape.expr, " (", shape.extents, ", ", dtype, ") on ",
                                              c.prow, "x", c.pcol, " NB ", c.nb);
        std::string error;
        if (grid != MPI_COMM_NULL) {
          error = meshtune::runtime::RunLibraryChain(specs, *forms, bytes, c, 1, 0, 7, grid).error;
        }
        ++*cases;
        if (!error.empty()) ++*failed;
        if (rank == 0)
          std::printf("%s: %s\n", name.c_str(), error.empty() ? "ok" : ("ERROR " + error).c_str());
        const meshtune::runtime::GemmForm& last = forms->back();
        if (plant && last.n == last.k && grid != MPI_COMM_NULL) {
          std::vector<meshtune::runtime::GemmForm> wrong = *forms;
          wrong.back().b_transposed = !wrong.back().b_transposed;
          const std::string caught =
              meshtune::runtime::RunLibraryChain(specs, wrong, bytes, c, 1, 0, 7, grid).error;
          if (rank == 0) {
            std::printf("%s planted: %s\n", name.c_str(),
                        caught.empty() ? "MISSED" : ("caught " + caught).c_str());
          }
        }
      });
    }
  }
}

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
      OnEveryGrid(
          size, {1, 2, 4, 64},
          [&](const meshtune::runtime::LibraryGemmConfig& config, MPI_Comm grid) {
            const std::string name =
                absl::StrCat(shape.expr, " (", shape.extents, ", ", dtype, ") on ", config.prow,
                             "x", config.pcol, " NB ", config.nb);
            std::string error;
            if (grid != MPI_COMM_NULL) {
              error = meshtune::runtime::RunLibraryGemm(spec, *form, bytes, config, 1, 0, 7, grid)
                          .error;
            }
            ++cases;
            if (!error.empty()) ++failed;
            if (rank == 0)
              std::printf("%s: %s\n", name.c_str(),
                          error.empty() ? "ok" : ("ERROR " + error).c_str());
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
          });
    }
  }
  RunChains(size, plant, &cases, &failed);
  if (rank == 0) std::printf("cases %d failed %d\n", cases, failed);
  MPI_Finalize();
  return 0;
}
