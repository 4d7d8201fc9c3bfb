#include "storage/calibration_fit.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace meshtune::storage {
namespace {

struct Line {
  double intercept = 0, slope = 0;
};

// Least-squares fit of t = intercept + slope * x weighted by 1 / t^2, with non-negative
// coefficients (FitProfile's contract). For two coefficients the clamped solutions below
// are exactly the constrained optimum: the free fit's intercept is negative precisely when
// the intercept-0 fit satisfies the optimality condition, and likewise for the slope.
Line FitNonNegative(const std::vector<double>& x, const std::vector<double>& t) {
  double s = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = 1 / (t[i] * t[i]);
    s += w;
    sx += w * x[i];
    sxx += w * x[i] * x[i];
    st += w * t[i];
    sxt += w * x[i] * t[i];
  }
  Line line;
  const double det = s * sxx - sx * sx;
  if (det > 0) {
    line.intercept = (sxx * st - sx * sxt) / det;
    line.slope = (s * sxt - sx * st) / det;
  }
  if (det <= 0 || line.slope < 0) {  // one size only, or a negative slope: the weighted mean
    line.slope = 0;
    line.intercept = st / s;
  } else if (line.intercept < 0) {  // a line through the origin
    line.intercept = 0;
    line.slope = sxt / sxx;
  }
  return line;
}

// FitProfile's overlap from the three "overlap_*" samples' seconds (by kind): 0 when there
// are none, DataLoss unless there is exactly one of each.
absl::StatusOr<double> OverlapFraction(const std::map<std::string, std::vector<double>>& samples) {
  if (samples.empty()) return 0.0;
  for (const char* kind : {"overlap_gemm", "overlap_shift", "overlap_both"}) {
    const auto it = samples.find(kind);
    const size_t n = it == samples.end() ? 0 : it->second.size();
    if (n != 1) {
      return absl::DataLossError(
          absl::StrCat("the calibration has ", n, " \"", kind, "\" samples; one is needed"));
    }
  }
  const double gemm = samples.at("overlap_gemm")[0], shift = samples.at("overlap_shift")[0];
  const double hidden = (gemm + shift - samples.at("overlap_both")[0]) / std::min(gemm, shift);
  return std::clamp(hidden, 0.0, 1.0);
}

}  // namespace

absl::StatusOr<v1::HardwareProfile> FitProfile(const v1::HardwareProfile& measured) {
  if (measured.ranks() < 2) {
    return absl::DataLossError(
        absl::StrCat("the calibration ran on ", measured.ranks(), " ranks; at least 2 are needed"));
  }
  if (measured.gemm_n() < 1) {
    return absl::DataLossError(
        absl::StrCat("the calibration's GEMM size gemm_n is ", measured.gemm_n()));
  }
  std::vector<double> pp_bytes, pp_s, sh_bytes, sh_s, bc_bytes, bc_s, gemm_s;
  std::map<std::string, std::vector<double>> overlap;  // "overlap_*" kind -> seconds
  for (int i = 0; i < measured.samples_size(); ++i) {
    const v1::CalibrationSample& s = measured.samples(i);
    const std::string what =
        absl::StrCat("calibration sample ", i, " (", s.kind(), ", ", s.bytes(), " bytes)");
    if (s.bytes() <= 0 || !(s.seconds() > 0) || !std::isfinite(s.seconds())) {
      return absl::DataLossError(absl::StrCat(what, ": seconds is ", s.seconds(),
                                              "; bytes and seconds must be positive and finite"));
    }
    if (s.kind() == "pingpong") {
      pp_bytes.push_back(s.bytes());
      pp_s.push_back(s.seconds());
    } else if (s.kind() == "shift") {
      sh_bytes.push_back(s.bytes());
      sh_s.push_back(s.seconds());
    } else if (s.kind() == "bcast") {
      bc_bytes.push_back(s.bytes());
      bc_s.push_back(s.seconds());
    } else if (s.kind() == "gemm") {
      gemm_s.push_back(s.seconds());
    } else if (s.kind() == "overlap_gemm" || s.kind() == "overlap_shift" ||
               s.kind() == "overlap_both") {
      overlap[s.kind()].push_back(s.seconds());
    } else {
      return absl::DataLossError(absl::StrCat(what, ": unknown kind \"", s.kind(), "\""));
    }
  }
  for (const auto& [kind, n] :
       {std::pair<const char*, size_t>{"pingpong", pp_s.size()}, {"bcast", bc_s.size()}}) {
    if (n == 0)
      return absl::DataLossError(absl::StrCat("the calibration has no \"", kind, "\" sample"));
  }
  if (gemm_s.size() != 1) {
    return absl::DataLossError(
        absl::StrCat("the calibration has ", gemm_s.size(), " \"gemm\" samples; one is needed"));
  }

  absl::StatusOr<double> hidden = OverlapFraction(overlap);
  if (!hidden.ok()) return hidden.status();

  v1::HardwareProfile profile = measured;
  profile.set_overlap(*hidden);
  // Point-to-point transfers of a schedule run on every rank at once: the ring exchange
  // (profiles from before it existed have the ping-pong alone).
  const Line p2p = sh_s.empty() ? FitNonNegative(pp_bytes, pp_s) : FitNonNegative(sh_bytes, sh_s);
  const Line coll = FitNonNegative(bc_bytes, bc_s);
  const double n = measured.gemm_n();
  profile.set_alpha_s(p2p.intercept);
  profile.set_beta_s_per_byte(p2p.slope);
  profile.set_alpha_coll_s(coll.intercept / std::log2(static_cast<double>(measured.ranks())));
  profile.set_beta_coll_s_per_byte(coll.slope);
  profile.set_gamma_s_per_flop(gemm_s[0] / (2 * n * n * n));
  return profile;
}

}  // namespace meshtune::storage
