// The emitted C++ of SUMMA builds (Bazel builds it from `meshtune codegen` output) and
// computes the same output checksum as the executor, both verified, under mpirun on 2x2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string RunMpi(const std::string& program_and_args) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(tmp ? tmp : "/tmp") + "/mpi_out.txt";
  const std::string cmd = "timeout 120 mpirun -n 4 --oversubscribe " + program_and_args + " >" + out + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double Checksum(const std::string& json) {
  const size_t at = json.find("\"checksum\":");
  EXPECT_NE(at, std::string::npos) << json;
  return at == std::string::npos ? 0 : std::strtod(json.c_str() + at + 11, nullptr);
}

TEST(EmittedCppTest, SummaMatchesTheExecutor) {
  const std::string emitted = RunMpi("tests/summa_emitted --reps 1 --seed 7");
  const std::string executed =
      RunMpi("runtime/meshtune_worker --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=24,k=16 "
             "--mesh x=2,y=2 --trace tests/testdata/summa_2x2.trace --reps 1 --seed 7");
  EXPECT_NE(emitted.find("\"verified\": true"), std::string::npos) << emitted;
  EXPECT_NE(executed.find("\"verified\":true"), std::string::npos) << executed;
  EXPECT_EQ(Checksum(emitted), Checksum(executed)) << emitted << "\n" << executed;
  EXPECT_NE(Checksum(emitted), 0.0);
}

}  // namespace
