// When ScaLAPACK's GEMM beats every schedule of a tune beyond the noise, the record's answer
// is the library (meshtune.v1.Record.library) and every way out serves it: `run --record`
// runs PSGEMM under MPI (checked by the oracle), `codegen --record` writes a kernel that
// calls it, `records export` carries it, and a plan from that wisdom file computes with it
// on block-cyclic shards, checked here against a serial reference (tests/library_plan_app.cc,
// at odd extents, 3 and 4 ranks, a transposed form, a scatter from a root other than 0). A
// program whose statements are all of matmul form is measured against the library's chain
// (one grid, every matrix block-cyclic): when the chain wins, `run` and plans execute it and
// codegen says it writes one statement's library kernel.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/test_util.h"

namespace meshtune::testing {
namespace {

const char kGemm[] = "--expr 'C[m,n] += A[m,k] * B[k,n]'";

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

TEST(LibraryAnswerTest, APlanFromALibraryRecordComputesOnBlockCyclicShards) {
  const std::string wisdom = "--wisdom tests/testdata/library_wisdom.jsonl";
  CliRun four =
      Mpirun(4, "tests/library_plan_app", wisdom + " --mnk 37,29,23 --accumulate 1 --root 1");
  EXPECT_EQ(four.status, 0) << four.out;
  EXPECT_NE(four.out.find("library: PSGEMM 2x2, NB 8 on x=2,y=2\n"), std::string::npos) << four.out;
  EXPECT_NE(four.out.find("verified\n"), std::string::npos) << four.out;
  CliRun three =
      Mpirun(3, "tests/library_plan_app", wisdom + " --mnk 19,21,17 --transposed 1 --root 2");
  EXPECT_EQ(three.status, 0) << three.out;
  EXPECT_NE(three.out.find("library: PSGEMM 1x3, NB 4 on x=1,y=3\n"), std::string::npos)
      << three.out;
  // Measured on the application's own 4 ranks (no mpirun inside): at 16^3 the library wins
  // there too, and the plan is its call.
  CliRun measured = Mpirun(4, "tests/library_plan_app", "--mode measure --mnk 16,16,16");
  EXPECT_EQ(measured.status, 0) << measured.out;
  EXPECT_NE(measured.out.find("library: PSGEMM 1x4, NB 16 on x=1,y=4\n"), std::string::npos)
      << measured.out;
  EXPECT_NE(measured.out.find("verified\n"), std::string::npos) << measured.out;
  // The record is for 4 ranks: on 2 there is none.
  CliRun two = Mpirun(2, "tests/library_plan_app", wisdom + " --mnk 37,29,23 --accumulate 1");
  EXPECT_NE(two.status, 0);
  EXPECT_NE(two.out.find("rank 0: error: no tuning record for C[i,j] += A[i,k] * B[k,j] "
                         "(i=37,j=29,k=23, f32) on ranks=2"),
            std::string::npos)
      << two.out;
}

TEST(LibraryAnswerTest, ATuneTheLibraryWinsIsServedByRunCodegenAndPlans) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("MESHTUNE_HOME", (TmpDir() + "/home").c_str(), 1);
  const std::string db = "--db " + TmpDir() + "/library.db";
  // 16^3 on 4 ranks: PSGEMM on a 1x4 grid with 16-blocks keeps everything on one rank and
  // runs in microseconds; every schedule communicates.
  CliRun tune = Meshtune(std::string("tune ") + kGemm +
                         " --extents m=16,n=16,k=16 --ranks 4 --top-k 2 --no-calibrate " + db);
  ASSERT_EQ(tune.status, 0) << tune.out << tune.err;
  EXPECT_NE(tune.out.find("answer: ScaLAPACK's PSGEMM on a 1x4 grid, NB 16, measured "),
            std::string::npos)
      << tune.out;
  EXPECT_NE(tune.out.find("vs library 1 x"), std::string::npos) << tune.out;
  EXPECT_NE(tune.err.find("meshtune: the answer is ScaLAPACK's PSGEMM (1x4 grid, NB 16)"),
            std::string::npos)
      << tune.err;
  const std::string id = RecordIdOf(tune.out);
  ASSERT_FALSE(id.empty()) << tune.out;

  CliRun run = Meshtune("run --record " + id + " --json " + db);
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("\"verified\":true"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"checked\":\"measured\""), std::string::npos) << run.out;
  CliRun simulated = Meshtune("run --record " + id + " --simulate " + db);
  EXPECT_EQ(simulated.status, 2);
  EXPECT_EQ(simulated.err,
            "meshtune: --simulate runs schedules; the record's answer is the library, which runs "
            "under MPI only\n");
  CliRun neither = Meshtune(std::string("run ") + kGemm + " --extents m=2,n=2,k=2 " + db);
  EXPECT_EQ(neither.status, 2);
  EXPECT_EQ(neither.err,
            "meshtune: give exactly one of --trace FILE, --record ID and --library PxQ,NB\n");

  CliRun kernel = Meshtune("codegen --record " + id + " " + db);
  EXPECT_EQ(kernel.status, 0) << kernel.err;
  EXPECT_NE(kernel.out.find("psgemm_("), std::string::npos) << kernel.out;
  EXPECT_NE(kernel.out.find("descinit_("), std::string::npos) << kernel.out;
  CliRun looked_up = Meshtune(std::string("codegen --lookup ") + kGemm +
                              " --extents m=16,n=16,k=16 --ranks 4 --main " + db);
  EXPECT_EQ(looked_up.status, 0) << looked_up.err;
  EXPECT_NE(looked_up.out.find("psgemm_("), std::string::npos);

  const std::string wisdom = TmpDir() + "/library.jsonl";
  CliRun exported = Meshtune("records export " + db);
  ASSERT_EQ(exported.status, 0) << exported.err;
  const std::string& text = exported.out;
  std::ofstream(wisdom) << text;
  EXPECT_NE(text.find("\"library\":{\"library\":\"PSGEMM\",\"prow\":1,\"pcol\":4,\"nb\":16"),
            std::string::npos)
      << text;
  CliRun plan = Mpirun(4, "tests/library_plan_app",
                       "--wisdom " + wisdom + " --mnk 16,16,16 --accumulate 1 --root 3");
  EXPECT_EQ(plan.status, 0) << plan.out;
  EXPECT_NE(plan.out.find("library: PSGEMM 1x4, NB 16 on x=1,y=4\n"), std::string::npos)
      << plan.out;
  EXPECT_NE(plan.out.find("verified\n"), std::string::npos) << plan.out;
}

TEST(LibraryAnswerTest, AProgramOfMatmulsTheLibraryWinsIsServedByRunAndPlans) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("MESHTUNE_HOME", (TmpDir() + "/home").c_str(), 1);
  const std::string db = "--db " + TmpDir() + "/program_library.db";
  const std::string mlp =
      "--expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]' --extents "
      "b=16,d=16,f=16,e=16";
  // The chain of two PSGEMMs on one grid, measured beside the joint programs: every matrix
  // fits a block of a rank, and every program communicates.
  CliRun tune = Meshtune("tune " + mlp + " --ranks 4 --top-k 2 --no-calibrate " + db);
  ASSERT_EQ(tune.status, 0) << tune.out << tune.err;
  EXPECT_NE(tune.out.find("answer: ScaLAPACK's PSGEMM on a "), std::string::npos) << tune.out;
  EXPECT_NE(tune.out.find("chosen program on "), std::string::npos) << tune.out;
  EXPECT_NE(tune.out.find("  library: PSGEMM "), std::string::npos) << tune.out;
  const std::string id = RecordIdOf(tune.out);
  ASSERT_FALSE(id.empty()) << tune.out;

  // `run` runs the chain under MPI, checked against the program's serial reference; so
  // does a chain given by hand.
  CliRun run = Meshtune("run --record " + id + " --json " + db);
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("\"verified\":true"), std::string::npos) << run.out;
  CliRun by_hand = Meshtune("run " + mlp + " --library 2x2,4 --json " + db);
  EXPECT_EQ(by_hand.status, 0) << by_hand.out << by_hand.err;
  EXPECT_NE(by_hand.out.find("\"verified\":true"), std::string::npos) << by_hand.out;
  CliRun not_matmul = Meshtune(
      "run --expr 'H[b,f] = X[b,d] * W1[d,f]; G[b,f] = H[b,f] + B[b,f]' --extents b=4,d=4,f=4 "
      "--library 2x2,4 " +
      db);
  EXPECT_EQ(not_matmul.status, 2);
  EXPECT_EQ(not_matmul.err,
            "meshtune: the library serves programs of matmul form only: statement 2 (G) is not "
            "of matmul form\n");
  // codegen writes one statement's library kernel, and says so.
  CliRun kernel = Meshtune("codegen --record " + id + " " + db);
  EXPECT_EQ(kernel.status, 2);
  EXPECT_EQ(kernel.err,
            "meshtune: the answer is the library, a chain of its calls over the program's "
            "statements, which `meshtune run` and plans execute; codegen writes the library's "
            "kernel for one statement (give the program's --trace to generate its schedules' "
            "kernel)\n");

  // Exported, the record carries the chain's call; a plan from it computes with it on
  // block-cyclic shards, every tensor checked against the application's own reference.
  const std::string wisdom = TmpDir() + "/program_library.jsonl";
  CliRun exported = Meshtune("records export " + db);
  ASSERT_EQ(exported.status, 0) << exported.err;
  std::ofstream(wisdom) << exported.out;
  EXPECT_NE(exported.out.find("\"library\":{\"library\":\"PSGEMM\""), std::string::npos)
      << exported.out;
  CliRun plan = Mpirun(4, "tests/plan_program_app", mlp + " --mode wisdom --wisdom " + wisdom);
  EXPECT_EQ(plan.status, 0) << plan.out;
  EXPECT_NE(plan.out.find("library: PSGEMM "), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("program: verified\n"), std::string::npos) << plan.out;
}

}  // namespace
}  // namespace meshtune::testing
