// Calibration on first use, as a new user meets it: in a fresh MESHTUNE_HOME a tune on a
// rank count without a profile calibrates one (the quick form under mpirun), stores it as
// "auto-P" marked automatic and says so in one line on stderr; the next tune uses it
// silently; `meshtune calibrate --ranks P` replaces it; --no-calibrate and
// MESHTUNE_CALIBRATE=0 keep the built-in numbers; rank counts this node cannot calibrate
// quickly are not tried; an application's plan measures on its own communicator. And the
// runs a measured tune keeps: listed by `records runs`, carried by export and import.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "storage/hardware_profile.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::Occurrences;

constexpr char kTune[] =
    "tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=48,k=32 --model-only --no-db";

class FirstUseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    home_ = std::string(tmp ? tmp : "/tmp") + "/home";
    ASSERT_EQ(std::system(("rm -rf '" + home_ + "' && mkdir -p '" + home_ + "'").c_str()), 0);
    setenv("MESHTUNE_HOME", home_.c_str(), 1);
    unsetenv("MESHTUNE_CALIBRATE");  // the suite sets it to 0 (.bazelrc)
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
  }

  bool Exists(const std::string& profile) const {
    struct stat st;
    return stat((home_ + "/profiles/" + profile + ".json").c_str(), &st) == 0;
  }

  // The lines of `err` that start with "meshtune: ".
  static std::vector<std::string> Notes(const std::string& err) {
    std::vector<std::string> notes;
    for (absl::string_view line : absl::StrSplit(err, '\n')) {
      if (absl::StartsWith(line, "meshtune: ")) notes.emplace_back(line);
    }
    return notes;
  }

  std::string home_;
};

TEST_F(FirstUseTest, TheFirstTuneCalibratesTheNextUsesItAndCalibrateReplacesIt) {
  const CliRun first = Meshtune(absl::StrCat(kTune, " --ranks 2"));
  ASSERT_EQ(first.status, 0) << first.out << first.err;
  const std::vector<std::string> notes = Notes(first.err);
  ASSERT_EQ(notes.size(), 1u) << first.err;
  EXPECT_TRUE(absl::StartsWith(notes[0], "meshtune: no hardware profile for 2 ranks on "))
      << notes[0];
  EXPECT_TRUE(absl::StrContains(
      notes[0],
      " (quick form) and saved it as \"auto-2\"; `meshtune calibrate --ranks 2` measures "
      "it fully, --no-calibrate keeps built-in numbers"))
      << notes[0];
  absl::StatusOr<meshtune::v1::HardwareProfile> made = meshtune::storage::LoadProfile("auto-2");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(made->automatic());
  EXPECT_EQ(made->ranks(), 2);
  EXPECT_GT(made->gamma_s_per_flop(), 0);
  EXPECT_GT(made->beta_s_per_byte(), 0);
  EXPECT_FALSE(Exists("default"));

  const CliRun second = Meshtune(absl::StrCat(kTune, " --ranks 2"));
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_TRUE(Notes(second.err).empty()) << second.err;
  // The winner is costed with the profile's numbers, not the built-in ones.
  const CliRun builtin =
      Meshtune(absl::StrCat(kTune, " --ranks 2 --no-calibrate --profile auto-2"));
  EXPECT_EQ(builtin.status, 0);

  const CliRun calibrate = Meshtune("calibrate --ranks 2 --quick --timeout 120");
  ASSERT_EQ(calibrate.status, 0) << calibrate.err;
  EXPECT_FALSE(Exists("auto-2"));
  absl::StatusOr<meshtune::v1::HardwareProfile> replaced =
      meshtune::storage::LoadProfile("default");
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_FALSE(replaced->automatic());
  const CliRun third = Meshtune(absl::StrCat(kTune, " --ranks 2"));
  EXPECT_TRUE(Notes(third.err).empty()) << third.err;
  EXPECT_FALSE(Exists("auto-2"));
}

TEST_F(FirstUseTest, NoCalibrateAndTheEnvironmentKeepTheBuiltinNumbers) {
  const std::string builtin =
      "meshtune: no hardware profile \"default\": using built-in machine numbers; run `meshtune "
      "calibrate --ranks P` for this machine's own numbers";
  const CliRun flag = Meshtune(absl::StrCat(kTune, " --ranks 2 --no-calibrate"));
  ASSERT_EQ(flag.status, 0) << flag.err;
  EXPECT_EQ(Notes(flag.err), std::vector<std::string>{builtin}) << flag.err;
  setenv("MESHTUNE_CALIBRATE", "0", 1);
  const CliRun env = Meshtune(absl::StrCat(kTune, " --ranks 2"));
  unsetenv("MESHTUNE_CALIBRATE");
  ASSERT_EQ(env.status, 0) << env.err;
  EXPECT_EQ(Notes(env.err), std::vector<std::string>{builtin}) << env.err;
  EXPECT_FALSE(Exists("auto-2"));
  EXPECT_FALSE(Exists("default"));
}

TEST_F(FirstUseTest, RankCountsBeyondTwiceTheCoresAreNotCalibratedHere) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const long ranks = 2 * cores + 1;
  const CliRun r = Meshtune(absl::StrCat(kTune, " --ranks ", ranks));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Notes(r.err),
            std::vector<std::string>{absl::StrCat(
                "meshtune: no hardware profile for ", ranks, " ranks, more than this node (", cores,
                " cores) calibrates on first use: using built-in machine numbers")})
      << r.err;
  EXPECT_FALSE(Exists(absl::StrCat("auto-", ranks)));
}

TEST_F(FirstUseTest, ADefaultOfAnotherRankCountIsNotTakenForThisOne) {
  meshtune::v1::HardwareProfile two;
  two.set_name("default");
  two.set_ranks(3);
  two.set_alpha_s(2e-6);
  two.set_beta_s_per_byte(3e-10);
  two.set_gamma_s_per_flop(1e-10);
  ASSERT_TRUE(meshtune::storage::SaveProfile(two).ok());
  const CliRun kept = Meshtune(absl::StrCat(kTune, " --ranks 2 --no-calibrate"));
  ASSERT_EQ(kept.status, 0) << kept.err;
  EXPECT_EQ(Notes(kept.err),
            std::vector<std::string>{
                "meshtune: hardware profile \"default\" was calibrated on 3 ranks, this tune runs "
                "on 2: for this rank count run `meshtune calibrate --ranks 2 --name NAME` and tune "
                "with --profile NAME"})
      << kept.err;
  const CliRun made = Meshtune(absl::StrCat(kTune, " --ranks 2"));
  ASSERT_EQ(made.status, 0) << made.err;
  ASSERT_EQ(Notes(made.err).size(), 1u) << made.err;
  EXPECT_TRUE(absl::StrContains(made.err, "saved it as \"auto-2\"")) << made.err;
  EXPECT_TRUE(Exists("auto-2"));
  // The default of 3 ranks stays as it was.
  EXPECT_EQ(meshtune::storage::LoadProfile("default")->ranks(), 3);
}

TEST_F(FirstUseTest, APlanMeasuresOnItsOwnCommunicator) {
  // Mpirun puts MESHTUNE_HOME at $TEST_TMPDIR/home: this test's fresh home.
  const CliRun first =
      ::meshtune::testing::Mpirun(2, "examples/api_app/api_app", "--mode estimate");
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_EQ(Occurrences(first.out, "meshtune: no hardware profile for 2 ranks on "), 1)
      << first.out;
  EXPECT_TRUE(absl::StrContains(first.out, "saved it as \"auto-2\"")) << first.out;
  EXPECT_TRUE(absl::StrContains(first.out, "verified")) << first.out;
  absl::StatusOr<meshtune::v1::HardwareProfile> made = meshtune::storage::LoadProfile("auto-2");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(made->automatic());
  EXPECT_EQ(made->ranks(), 2);
  const CliRun second =
      ::meshtune::testing::Mpirun(2, "examples/api_app/api_app", "--mode estimate");
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_EQ(Occurrences(second.out, "no hardware profile"), 0) << second.out;
}

TEST_F(FirstUseTest, MeasuredTunesKeepTheirRunsWhichExportAndImport) {
  const std::string db = home_ + "/t.db", other = home_ + "/other.db";
  const CliRun tune = Meshtune(
      absl::StrCat("tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=48,k=32 --mesh x=2 "
                   "--top-k 2 --reps 1 --warmup 0 --db ",
                   db));
  ASSERT_EQ(tune.status, 0) << tune.out << tune.err;
  const CliRun runs = Meshtune("records runs --db " + db);
  ASSERT_EQ(runs.status, 0) << runs.err;
  const std::vector<std::string> lines = absl::StrSplit(runs.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << runs.out;  // the header and the two measured candidates
  EXPECT_TRUE(absl::StartsWith(lines[0], "    id  source    profile     mesh")) << lines[0];
  for (int i : {1, 2}) {
    EXPECT_TRUE(absl::StrContains(lines[i], "  tune      auto-2      x=2  ")) << lines[i];
    EXPECT_TRUE(absl::EndsWith(lines[i], "C[m,n] += A[m,k] * B[k,n] with m=64,n=48,k=32"))
        << lines[i];
  }
  const CliRun json = Meshtune("records runs --json --profile auto-2 --db " + db);
  EXPECT_EQ(Occurrences(json.out, "\"source\":\"tune\""), 2) << json.out;
  EXPECT_EQ(Occurrences(json.out, "\"features\":{"), 2) << json.out;
  EXPECT_EQ(Meshtune("records runs --profile builtin --db " + db).out, "");

  const CliRun exported = Meshtune("records export --db " + db);
  ASSERT_EQ(exported.status, 0) << exported.err;
  EXPECT_EQ(Occurrences(exported.out, "\n{\"run\":{"), 2) << exported.out;
  const std::string file = home_ + "/wisdom.jsonl";
  { std::ofstream(file) << exported.out; }
  const CliRun imported = Meshtune("records import " + file + " --db " + other);
  ASSERT_EQ(imported.status, 0) << imported.err;
  EXPECT_TRUE(absl::StrContains(imported.out, "\nimported 2 measured runs (0 already present)\n"))
      << imported.out;
  const CliRun again = Meshtune("records import " + file + " --db " + other);
  EXPECT_TRUE(absl::StrContains(again.out, "\nimported 0 measured runs (2 already present)\n"))
      << again.out;
  EXPECT_EQ(Meshtune("records runs --db " + other).out, runs.out);
}

}  // namespace
