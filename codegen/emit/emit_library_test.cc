// The library's emitted C++ (codegen/emit/emit_library.h): the psgemm_/pdgemm_ call with the
// transposes and beta of the form, the descriptors of the matrices as stored, the header's
// declarations in the statement's tensor order, and the standalone program around
// RunLibraryGemm. (tests/emitted_library_test.cc runs the programs under mpirun.)
#include "codegen/emit/emit_library.h"

#include <gtest/gtest.h>

#include <string>

#include "ir/problem.h"

namespace meshtune::codegen {
namespace {

// Whether `text` contains `part` (the text in the message either way).
::testing::AssertionResult Has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess() << "'" << part << "' is in:\n" << text;
  }
  return ::testing::AssertionFailure() << "'" << part << "' is not in:\n" << text;
}

// C[m,n] (+)= A * B, m=37, n=29, k=23 on a 2x2 grid, NB 8.
LibraryKernelSpec Spec(bool a_transposed, bool b_transposed, bool accumulate) {
  LibraryKernelSpec s;
  s.c = "C";
  s.a = "A";
  s.b = "B";
  s.m = 37;
  s.n = 29;
  s.k = 23;
  s.a_transposed = a_transposed;
  s.b_transposed = b_transposed;
  s.accumulate = accumulate;
  s.prow = 2;
  s.pcol = 2;
  s.nb = 8;
  s.dtype_bytes = 4;
  return s;
}

TEST(EmitLibraryTest, PlainFormCallsPsgemmWithoutTransposes) {
  const CallableKernel k = EmitLibraryCallable(Spec(false, false, true), "t", "gemm", "gemm.h");
  EXPECT_TRUE(Has(k.header,
                  "int gemm(float* C, const float* A, const float* B, "
                  "MPI_Comm comm);"));
  EXPECT_TRUE(Has(k.header,
                  "int gemm_local(const char* tensor, int rank, int64_t* rows, "
                  "int64_t* cols);"));
  EXPECT_TRUE(Has(k.header, "cyclic(8,8)"));
  EXPECT_TRUE(Has(k.header, "2x2 BLACS grid in \"Row\""));
  EXPECT_TRUE(Has(k.header, "column-major with leading dimension\n// max(1, LOCr)"));
  EXPECT_TRUE(Has(k.header,
                  "i = (li / 8 * 2 + row) * 8 + li % 8, j = (lj / 8 * 2 + col) * 8 + "
                  "lj % 8"));
  EXPECT_TRUE(Has(k.header, "//   A: a 37 x 23 matrix  (input, only read)"));
  EXPECT_TRUE(Has(k.header, "//   C: a 37 x 29 matrix  (output, added to)"));
  EXPECT_TRUE(Has(k.source, "#include \"gemm.h\"\n"));
  EXPECT_TRUE(Has(k.source,
                  "psgemm_(\"N\", \"N\", &m, &n, &k, &alpha, p_A, &one, &one, "
                  "desc[1], p_B, &one, &one, desc[2], &beta, p_C, &one, &one, "
                  "desc[0]);"));
  EXPECT_TRUE(Has(k.source, "const float alpha = 1, beta = 1;"));
  EXPECT_TRUE(Has(k.source, "const int m = 37, n = 29, k = 23;"));
  EXPECT_TRUE(Has(k.source, "{{37, 29}, {37, 23}, {23, 29}}"));
  EXPECT_TRUE(Has(k.source, "Cblacs_gridinit(&context, \"Row\", prow, pcol);"));
  EXPECT_TRUE(Has(k.source, "Csys2blacs_handle(comm)"));
  EXPECT_TRUE(Has(k.source, "Cfree_blacs_system_handle(handle);"));
  EXPECT_TRUE(Has(k.source, "if (size != 4) {"));
  EXPECT_FALSE(Has(k.source, "pdgemm_"));
  // No file of this repository is included.
  EXPECT_FALSE(Has(k.source, "runtime/"));
  EXPECT_FALSE(Has(k.source, "third_party/"));
}

TEST(EmitLibraryTest, TransposedOperandsAndAssignment) {
  const CallableKernel at = EmitLibraryCallable(Spec(true, false, false), "t", "gemm", "");
  EXPECT_TRUE(Has(at.source, "psgemm_(\"T\", \"N\", &m, &n, &k,"));
  EXPECT_TRUE(Has(at.source, "const float alpha = 1, beta = 0;"));
  // A stored [k, m]: a 23 x 37 matrix.
  EXPECT_TRUE(Has(at.source, "{{37, 29}, {23, 37}, {23, 29}}"));
  EXPECT_TRUE(Has(at.header, "//   A: a 23 x 37 matrix (used transposed)"));
  EXPECT_TRUE(Has(at.header, "(output, overwritten)"));
  EXPECT_FALSE(Has(at.source, "#include \""));

  const CallableKernel bt = EmitLibraryCallable(Spec(false, true, false), "t", "gemm", "");
  EXPECT_TRUE(Has(bt.source, "psgemm_(\"N\", \"T\", &m, &n, &k,"));
  EXPECT_TRUE(Has(bt.source, "{{37, 29}, {37, 23}, {29, 23}}"));

  const CallableKernel both = EmitLibraryCallable(Spec(true, true, false), "t", "gemm", "");
  EXPECT_TRUE(Has(both.source, "psgemm_(\"T\", \"T\", &m, &n, &k,"));
}

TEST(EmitLibraryTest, DoublesCallPdgemm) {
  LibraryKernelSpec s = Spec(false, false, false);
  s.dtype_bytes = 8;
  EXPECT_EQ(LibraryRoutine(s), "PDGEMM");
  const CallableKernel k = EmitLibraryCallable(s, "t", "dgemm", "");
  EXPECT_TRUE(Has(k.header,
                  "int dgemm(double* C, const double* A, const double* B, "
                  "MPI_Comm comm);"));
  EXPECT_TRUE(Has(k.source, "pdgemm_(\"N\", \"N\", &m, &n, &k, &alpha, p_A,"));
  EXPECT_TRUE(Has(k.source, "const double alpha = 1, beta = 0;"));
  EXPECT_FALSE(Has(k.source, "psgemm_"));
}

// The kernel takes its pointers in the statement's order (C = B * A: C, B, A), and passes
// A and B to ScaLAPACK in their roles.
TEST(EmitLibraryTest, ParametersFollowTheStatementsOrder) {
  LibraryKernelSpec s = Spec(false, false, false);
  s.b_first = true;
  const CallableKernel k = EmitLibraryCallable(s, "t", "gemm", "");
  EXPECT_TRUE(Has(k.header,
                  "int gemm(float* C, const float* B, const float* A, "
                  "MPI_Comm comm);"));
  EXPECT_TRUE(Has(k.source,
                  "int gemm(float* p_C, const float* p_B, const float* p_A, "
                  "MPI_Comm comm)"));
  EXPECT_TRUE(Has(k.source, "p_A, &one, &one, desc[1], p_B, &one, &one, desc[2]"));
}

// NAME_local: every tensor's numroc, -1 for anything else.
TEST(EmitLibraryTest, LocalFunctionNamesEveryTensor) {
  const CallableKernel k = EmitLibraryCallable(Spec(true, false, false), "t", "gemm", "");
  EXPECT_TRUE(Has(k.source, "if (tensor == nullptr || rank < 0 || rank >= 4) return -1;"));
  EXPECT_TRUE(Has(k.source, "const int64_t row = rank / 2, col = rank % 2;"));
  EXPECT_TRUE(Has(k.source,
                  "if (std::strcmp(tensor, \"A\") == 0) {\n"
                  "    *rows = gemm_numroc(23, 8, row, 2);\n"
                  "    *cols = gemm_numroc(37, 8, col, 2);"));
}

TEST(EmitLibraryTest, TheProgramRunsTheKernelThroughTheOracle) {
  const absl::StatusOr<ir::Problem> problem =
      ir::ParseProblem("C[i,j] = B[j,k] * A[k,i]", "i=19,j=21,k=17", "f32");
  ASSERT_TRUE(problem.ok()) << problem.status();
  LibraryKernelSpec s;
  s.c = "C";
  s.a = "A";
  s.b = "B";
  s.b_first = true;
  s.m = 19;
  s.n = 21;
  s.k = 17;
  s.a_transposed = true;
  s.b_transposed = true;
  s.prow = 1;
  s.pcol = 3;
  s.nb = 4;
  const std::string main = EmitLibraryCpp(*problem, s, "the title\nsecond line");
  EXPECT_EQ(main.rfind("// the title\n// second line\n", 0), 0u) << main;
  EXPECT_TRUE(Has(main, "//   mpirun -n 3 ./program [--reps N] [--warmup N] [--seed S]"));
  EXPECT_TRUE(Has(main, "#include \"runtime/library/library_run.h\"\n"));
  EXPECT_TRUE(Has(main, "#include \"runtime/launch/run_result.h\"\n"));
  EXPECT_TRUE(Has(main,
                  "const ProblemSpec problem{{\"C\", {\"i\", \"j\"}}, "
                  "{{\"B\", {\"j\", \"k\"}}, {\"A\", {\"k\", \"i\"}}}, false, false, "
                  "{{\"i\", 19}, {\"j\", 21}, {\"k\", 17}}};"));
  EXPECT_TRUE(Has(main,
                  "RunLibraryGemm(\n          problem, emitted, 4, config, reps, "
                  "warmup, seed, MPI_COMM_WORLD,"));
  // The kernel gets (C, B, A) in the statement's order.
  EXPECT_TRUE(Has(main,
                  "meshtune_library_kernel(static_cast<float*>(c), "
                  "static_cast<const float*>(b), static_cast<const float*>(a), comm)"));
  EXPECT_TRUE(Has(main, "psgemm_(\"T\", \"T\", &m, &n, &k,"));
  EXPECT_TRUE(Has(main, "if (size != 3) {"));
  EXPECT_TRUE(Has(main, "RunResultLine(stats)"));
  EXPECT_TRUE(Has(main, "--reps"));
  EXPECT_TRUE(Has(main, "--warmup"));
  EXPECT_TRUE(Has(main, "--seed"));
}

}  // namespace
}  // namespace meshtune::codegen
