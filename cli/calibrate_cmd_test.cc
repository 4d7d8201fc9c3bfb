// `meshtune calibrate`'s option checks, without MPI; tests/calibrate_cli_test runs the whole
// command.
#include "cli/calibrate_cmd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace meshtune::cli {
namespace {

TEST(ValidateCalibrateOptionsTest, NamesTheBadFlag) {
  CalibrateOptions o;
  o.ranks = 4;
  EXPECT_TRUE(ValidateCalibrateOptions(o).ok());

  CalibrateOptions bad = o;
  bad.name = "a/b";
  EXPECT_EQ(ValidateCalibrateOptions(bad).message(),
            "invalid hardware profile name \"a/b\": character '/' is not allowed (letters, digits, "
            "'_', '-' and '.' "
            "are)");
  bad = o;
  bad.ranks = 1;
  EXPECT_EQ(ValidateCalibrateOptions(bad).message(),
            "--ranks 1 is out of range: calibrate needs 2 to 65536 ranks (it times messages "
            "between two of them)");
  bad = o;
  bad.dtype = "bf16";
  EXPECT_EQ(ValidateCalibrateOptions(bad).message(), "--dtype must be f32 or f64, not \"bf16\"");
  bad = o;
  bad.timeout_s = 0;
  EXPECT_EQ(ValidateCalibrateOptions(bad).message(),
            "--timeout 0 is out of range: it must be positive and at most 604800 s (a week)");
  bad.timeout_s = INFINITY;
  EXPECT_EQ(ValidateCalibrateOptions(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = o;
  bad.calibrator = "/nonexistent/meshtune_calibrate";
  EXPECT_EQ(ValidateCalibrateOptions(bad).message(),
            "--calibrator '/nonexistent/meshtune_calibrate' is not an executable file");
  bad.calibrator = "/tmp";  // a directory
  EXPECT_EQ(ValidateCalibrateOptions(bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace meshtune::cli
