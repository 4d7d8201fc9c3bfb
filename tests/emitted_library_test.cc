// The program `meshtune codegen --main` writes when a record's answer is the library
// (engine::Codegen with CodegenRequest.library; Bazel builds it by tests/emitted_library_gen):
// its kernel calls ScaLAPACK's PSGEMM on the tensors in cyclic(NB,NB), and the oracle of the
// problem as stated (runtime::RunLibraryGemm) verifies its output under mpirun, for
// C[m,n] += A[m,k] * B[k,n] on 2x2 with NB 8 and C[i,j] = A[k,i] * B[j,k] (both operands
// transposed) on 1x3 with NB 4, odd extents that the blocks do not divide. Run on the wrong
// number of ranks it says so and does not verify; engine::Codegen refuses what the library
// cannot serve.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/codegen.h"
#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"

namespace {

using ::meshtune::testing::ParsesAs;

// The output of `program_and_args` under mpirun on `ranks` ranks (exit status 0 expected).
std::string RunMpi(const std::string& program_and_args, int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(tmp ? tmp : "/tmp") + "/mpi_out.txt";
  const std::string cmd = "timeout 120 mpirun -n " + std::to_string(ranks) + " --oversubscribe " +
                          program_and_args + " >" + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The RunResult of the last line of `out` that starts with '{'; exactly one such line.
meshtune::v1::RunResult Result(const std::string& out) {
  std::string json;
  int lines = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') {
      json = line;
      ++lines;
    }
  }
  EXPECT_EQ(lines, 1) << out;
  meshtune::v1::RunResult r;
  EXPECT_TRUE(ParsesAs(json, &r)) << out;
  return r;
}

TEST(EmittedLibraryTest, PsgemmOnATwoByTwoGridVerifies) {
  const std::string out = RunMpi("tests/emitted_library_2x2 --reps 2 --warmup 1 --seed 7", 4);
  const meshtune::v1::RunResult r = Result(out);
  EXPECT_TRUE(r.verified()) << out;
  EXPECT_EQ(r.error(), "") << out;
  EXPECT_EQ(r.seconds_size(), 2) << out;
  EXPECT_GT(r.median_s(), 0.0) << out;
}

TEST(EmittedLibraryTest, BothOperandsTransposedOnAOneByThreeGridVerifies) {
  const std::string out = RunMpi("tests/emitted_library_1x3 --reps 1 --seed 3", 3);
  const meshtune::v1::RunResult r = Result(out);
  EXPECT_TRUE(r.verified()) << out;
  EXPECT_EQ(r.error(), "") << out;
  EXPECT_EQ(r.seconds_size(), 1) << out;
}

TEST(EmittedLibraryTest, TheWrongNumberOfRanksDoesNotVerify) {
  const std::string out = RunMpi("tests/emitted_library_2x2 --reps 1", 3);
  const meshtune::v1::RunResult r = Result(out);
  EXPECT_FALSE(r.verified()) << out;
  EXPECT_EQ(r.error(),
            "this program runs PSGEMM on a 2x2 grid: it needs 4 ranks (mpirun -n 4), "
            "it has 3")
      << out;
  EXPECT_EQ(r.seconds_size(), 0) << out;
}

// A request for the library: `expr` with `extents` (f32) on a prow x pcol grid, NB 4.
meshtune::v1::CodegenRequest LibraryRequest(const std::string& expr, const std::string& extents,
                                            int prow, int pcol) {
  meshtune::v1::CodegenRequest request;
  request.mutable_problem()->set_expr(expr);
  request.mutable_problem()->set_extents(extents);
  request.mutable_library()->set_library("PSGEMM");
  request.mutable_library()->set_prow(prow);
  request.mutable_library()->set_pcol(pcol);
  request.mutable_library()->set_nb(4);
  return request;
}

// The callable kernel (no --main) takes the tensors in the statement's order; its title names
// the library, the grid and the problem; no trace is needed.
TEST(EmittedLibraryTest, CodegenEmitsTheLibrarysCallableKernel) {
  meshtune::v1::CodegenRequest request =
      LibraryRequest("C[m,n] = B[k,n] * A[m,k]", "m=8,n=6,k=4", 2, 1);
  request.set_name("lib_gemm");
  request.set_header_name("lib_gemm.h");
  request.mutable_mesh()->set_axes("x=2");
  const absl::StatusOr<meshtune::v1::CodegenResponse> r = meshtune::engine::Codegen(request);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->header().find("int lib_gemm(float* C, const float* B, const float* A, "
                             "MPI_Comm comm);"),
            std::string::npos)
      << r->header();
  EXPECT_NE(r->header().find("ScaLAPACK PSGEMM on a 2x1 grid, NB 4"), std::string::npos)
      << r->header();
  EXPECT_NE(r->header().find("C[m,n] = B[k,n] * A[m,k]"), std::string::npos) << r->header();
  EXPECT_NE(r->source().find("#include \"lib_gemm.h\""), std::string::npos) << r->source();
  EXPECT_NE(r->source().find("psgemm_(\"N\", \"N\""), std::string::npos) << r->source();
}

TEST(EmittedLibraryTest, CodegenRefusesWhatTheLibraryCannotServe) {
  const auto message = [](const meshtune::v1::CodegenRequest& request) {
    const absl::StatusOr<meshtune::v1::CodegenResponse> r = meshtune::engine::Codegen(request);
    EXPECT_FALSE(r.ok());
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    }
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  const std::string not_matmul =
      message(LibraryRequest("C[m,n] = A[m,n] + B[m,n]", "m=8,n=6", 2, 1));
  EXPECT_EQ(not_matmul.rfind("the library serves problems of matmul form only; ", 0), 0u)
      << not_matmul;

  meshtune::v1::CodegenRequest wrong_mesh =
      LibraryRequest("C[m,n] += A[m,k] * B[k,n]", "m=8,n=6,k=4", 2, 2);
  wrong_mesh.mutable_mesh()->set_axes("x=3");
  const std::string mesh = message(wrong_mesh);
  EXPECT_NE(mesh.find("2x2"), std::string::npos) << mesh;
  EXPECT_NE(mesh.find("x=3"), std::string::npos) << mesh;

  meshtune::v1::CodegenRequest f64 =
      LibraryRequest("C[m,n] += A[m,k] * B[k,n]", "m=8,n=6,k=4", 2, 2);
  f64.mutable_problem()->set_dtype("f64");
  EXPECT_NE(message(f64).find("PDGEMM does"), std::string::npos) << message(f64);

  meshtune::v1::CodegenRequest root =
      LibraryRequest("C[m,n] += A[m,k] * B[k,n]", "m=8,n=6,k=4", 2, 2);
  (*root.mutable_problem()->mutable_layouts())["A"] = "root";
  EXPECT_NE(message(root).find("the problem gives A=root"), std::string::npos) << message(root);
}

}  // namespace
