// `meshtune fidelity` as a user runs it: a small matmul on 2 ranks, its candidates measured
// side by side under mpirun; the JSON line is a FidelityResult whose points are spread over
// the ranking (the best first, the worst last) and verified, each time its samples' median as
// measured, with its statistics (rho and tau with intervals, the separable pairs); the text
// names them and never a pace; the SVG scatter has one circle per verified point. A program
// of two statements: whole programs measured, each one job, their traces program traces.
// Bad flags exit 2 before anything runs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::ReadFile;

struct CliRun {
  int status = -1;
  std::string out, err;
};

class FidelityCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = std::string(tmp ? tmp : "/tmp") + "/fidelity_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "/home'").c_str()), 0);
    setenv("MESHTUNE_HOME", (dir_ + "/home").c_str(), 1);  // no profile: built-in numbers
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
  }

  CliRun Fidelity(const std::string& args) const {
    return FidelityOf("C[m,n] += A[m,k] * B[k,n]", args);
  }

  // `meshtune fidelity --expr 'EXPR' ARGS`.
  CliRun FidelityOf(const std::string& expr, const std::string& args) const {
    const std::string out = dir_ + "/out.txt", err = dir_ + "/err.txt";
    const int rc = std::system(("cli/meshtune fidelity --expr '" + expr + "' " + args +
                                " </dev/null >" + out + " 2>" + err)
                                   .c_str());
    CliRun r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
  }

  std::string dir_;
};

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(FidelityCliTest, MeasuresASpreadAndReportsItsStatistics) {
  const std::string svg = dir_ + "/scatter.svg";
  const CliRun r = Fidelity(
      "--extents m=32,n=32,k=32 --mesh x=2 --count 4 --rounds 6 --reps 6 --warmup 0 "
      "--max-evaluations 200 --json --svg " +
      svg);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  meshtune::v1::FidelityResult result;
  ASSERT_TRUE(meshtune::testing::ParsesAs(r.out, &result));
  EXPECT_EQ(result.problem(), "C[m,n] += A[m,k] * B[k,n] with k=32,m=32,n=32");
  EXPECT_EQ(result.mesh(), "x=2");
  ASSERT_EQ(result.points_size(), 4);
  ASSERT_EQ(result.ranks_size(), 4);
  EXPECT_EQ(result.ranks(0), 1);
  EXPECT_EQ(result.ranks(3), result.costed());
  for (int i = 0; i < 4; ++i) {
    const meshtune::v1::MeasuredCandidate& p = result.points(i);
    EXPECT_TRUE(p.verified()) << p.error();
    EXPECT_GT(p.measured_s(), 0);
    // One sample a round, exactly 6 (--rounds 6 --reps 6); the time is their median as
    // measured (of six, the mean of the middle two).
    ASSERT_EQ(p.round_s_size(), 6);
    EXPECT_EQ(p.sample().n(), 6);
    EXPECT_GE(p.sample().batch(), 1);
    ASSERT_EQ(p.sample().samples_s_size(), 6);
    std::vector<double> sorted(p.round_s().begin(), p.round_s().end());
    std::sort(sorted.begin(), sorted.end());
    EXPECT_NEAR(p.measured_s(), (sorted[2] + sorted[3]) / 2, 1e-12 * p.measured_s());
    EXPECT_EQ(p.sample().median_s(), p.measured_s());
    EXPECT_LE(p.sample().ci_low_s(), p.measured_s());
    EXPECT_GE(p.sample().ci_high_s(), p.measured_s());
    EXPECT_GT(p.predicted_s(), 0);
    EXPECT_EQ(p.mesh(), "x=2");
    EXPECT_FALSE(p.trace().text().empty());
    if (i > 0) {
      EXPECT_LE(result.points(i - 1).predicted_s(), p.predicted_s());
    }
  }
  EXPECT_EQ(result.verified(), 4);
  EXPECT_EQ(result.round_statistic(), "median");
  ASSERT_TRUE(result.has_spearman_rho() && result.has_kendall_tau());
  ASSERT_TRUE(result.has_spearman_rho_ci_low() && result.has_spearman_rho_ci_high());
  EXPECT_LE(result.spearman_rho_ci_low(), result.spearman_rho_ci_high());
  ASSERT_TRUE(result.has_kendall_tau_ci_low() && result.has_kendall_tau_ci_high());
  EXPECT_LE(result.kendall_tau_ci_low(), result.kendall_tau_ci_high());
  // Of the 6 pairs, those apart beyond the noise, and of them those ordered right.
  EXPECT_LE(result.separable_pairs(), 6);
  EXPECT_LE(result.separable_agree(), result.separable_pairs());
  EXPECT_EQ(result.has_separable_share(), result.separable_pairs() > 0);
  if (result.separable_pairs() > 0) {
    EXPECT_DOUBLE_EQ(result.separable_share(),
                     static_cast<double>(result.separable_agree()) / result.separable_pairs());
  }
  EXPECT_TRUE(result.has_median_relative_error());
  EXPECT_FALSE(result.patterns().empty());
  const std::string picture = ReadFile(svg);
  EXPECT_EQ(picture.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << picture;
  EXPECT_EQ(Count(picture, "class=\"point\""), 4);
  EXPECT_NE(r.err.find("no hardware profile \"default\": using built-in machine numbers"),
            std::string::npos)
      << r.err;

  const CliRun text = Fidelity(
      "--extents m=32,n=32,k=32 --mesh x=2 --count 2 --rounds 1 --reps 1 "
      "--warmup 0 --max-evaluations 200");
  ASSERT_EQ(text.status, 0) << text.out << text.err;
  EXPECT_EQ(text.out.rfind("fidelity of C[m,n] += A[m,k] * B[k,n] with k=32,m=32,n=32 on x=2: 2 "
                           "of ",
                           0),
            0u)
      << text.out;
  EXPECT_NE(text.out.find("\nSpearman's rho   "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" costed candidates measured in 1 round, spread over the model's "
                          "ranking\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("\nKendall's tau    "), std::string::npos) << text.out;
  // One sample each: nothing is apart beyond the noise.
  EXPECT_NE(text.out.find("\nseparable pairs: none (no two verified times differ beyond the "
                          "noise; more --rounds may tell them apart)\n"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find(" pace"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nrounds' own rho  -  (one round's times against another's"),
            std::string::npos)
      << text.out;  // one round: nothing to compare
  EXPECT_NE(text.out.find("\nmedian |error|   "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nper pattern      "), std::string::npos) << text.out;
}

// A program of two statements: its candidates are whole programs, each measured as one job
// (every statement and the move between them) and verified; the points' traces are program
// traces; the text names the programs and each statement's family.
TEST_F(FidelityCliTest, MeasuresAProgramsWholePrograms) {
  const std::string program = "T[i,k] = A[i,j] * B[j,k]; C[i,l] += T[i,k] * D[k,l]";
  const CliRun r = FidelityOf(program,
                              "--extents i=16,j=16,k=16,l=16 --mesh x=2 --count 3 --rounds 2 "
                              "--reps 2 --warmup 0 --max-evaluations 100 --no-db --json");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  meshtune::v1::FidelityResult result;
  ASSERT_TRUE(meshtune::testing::ParsesAs(r.out, &result));
  EXPECT_EQ(result.problem(), program + " with i=16,j=16,k=16,l=16");
  EXPECT_EQ(result.mesh(), "x=2");
  ASSERT_EQ(result.points_size(), 3);
  EXPECT_EQ(result.ranks(0), 1);
  EXPECT_EQ(result.ranks(2), result.costed());
  for (const meshtune::v1::MeasuredCandidate& p : result.points()) {
    EXPECT_TRUE(p.verified()) << p.error();
    EXPECT_GT(p.measured_s(), 0);
    EXPECT_EQ(p.round_s_size(), 2);
    EXPECT_GT(p.predicted_s(), 0);
    EXPECT_EQ(p.trace().text().rfind("# statement 1: T[i,k] = A[i,j] * B[j,k]\n", 0), 0u)
        << p.trace().text();
    EXPECT_NE(p.trace().text().find("\n---\n# statement 2: C[i,l] += T[i,k] * D[k,l]\n"),
              std::string::npos)
        << p.trace().text();
    EXPECT_EQ(p.family().rfind("x=2: ", 0), 0u) << p.family();
  }
  EXPECT_EQ(result.verified(), 3);
  EXPECT_TRUE(result.has_spearman_rho());

  const CliRun text = FidelityOf(program,
                                 "--extents i=16,j=16,k=16,l=16 --mesh x=2 --count 2 --rounds 1 "
                                 "--reps 1 --warmup 0 --max-evaluations 100 --no-db");
  ASSERT_EQ(text.status, 0) << text.out << text.err;
  EXPECT_EQ(text.out.rfind("fidelity of " + program + " with i=16,j=16,k=16,l=16 on x=2: 2 of ", 0),
            0u)
      << text.out;
  EXPECT_NE(text.out.find(" ranked programs measured in 1 round, spread over the model's ranking "
                          "(each program one job: every statement, every move)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  error  statement 1 | statement 2\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nSpearman's rho   "), std::string::npos) << text.out;
}

TEST_F(FidelityCliTest, BadInputExitsTwoBeforeMeasuring) {
  const CliRun help = Fidelity("--help");
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_NE(help.out.find("--rounds"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find(" pace"), std::string::npos) << help.out;  // "space" aside
  CliRun r = Fidelity("--extents m=8,n=8,k=8 --mesh x=2 --count 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--count: '1' is out of range; give an integer from 2 to 1000"),
            std::string::npos)
      << r.err;
  r = Fidelity("--extents m=8,n=8,k=8 --mesh x=2 --rounds 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--rounds: '0' is out of range; give an integer from 1 to 1000"),
            std::string::npos)
      << r.err;
  r = Fidelity("--extents m=8,n=8,k=8 --mesh x=2 --round-statistic mean");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--round-statistic: mean not in {min,median}"), std::string::npos) << r.err;
  r = Fidelity("--extents m=8,n=8,k=8 --mesh x=2 --profile nosuch");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("meshtune: no hardware profile \"nosuch\""), std::string::npos) << r.err;
  r = Fidelity("--extents m=8,n=8,k=8 --mesh x=2 --svg /nonexistent-meshtune-dir/f.svg");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("meshtune: cannot open '/nonexistent-meshtune-dir/f.svg' for writing: No "
                       "such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  r = Fidelity("--extents m=8,n=8 --mesh x=2");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("meshtune: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("k"), std::string::npos) << r.err;
}

}  // namespace
