#include "storage/calibration_fit.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cost/collective_costs.h"

namespace meshtune::storage {
namespace {

// Collective samples are "coll_" and the collective's name (cost/collective_costs.h).
constexpr char kCollectivePrefix[] = "coll_";

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

// Whether `kind` is one of the samples FitTables fits.
bool IsTableKind(const std::string& kind) {
  return kind == "gemm_tile" || kind == "copy" || kind == "add" || kind == "gather" ||
         absl::StartsWith(kind, kCollectivePrefix);
}

// The collective lines (per kind and group size), GEMM rates and memory-pass rates of
// `measured`'s samples of those kinds, set in `profile`. DataLoss for a collective sample
// of an unknown collective or a group below 2, or a GEMM tile without a shape.
absl::Status FitTables(const v1::HardwareProfile& measured, v1::HardwareProfile* profile) {
  std::map<std::pair<std::string, int>, std::pair<std::vector<double>, std::vector<double>>> coll;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> pass;
  for (const v1::CalibrationSample& s : measured.samples()) {
    if (absl::StartsWith(s.kind(), kCollectivePrefix)) {
      const std::string name = s.kind().substr(std::strlen(kCollectivePrefix));
      if (!cost::ParseCollective(name).has_value() || s.group() < 2) {
        return absl::DataLossError(absl::StrCat("calibration sample \"", s.kind(), "\" over ",
                                                s.group(),
                                                " ranks: not a collective of 2 or more ranks"));
      }
      auto& line = coll[{name, s.group()}];
      line.first.push_back(static_cast<double>(s.bytes()));
      line.second.push_back(s.seconds());
    } else if (s.kind() == "gemm_tile") {
      if (s.m() < 1 || s.n() < 1 || s.k() < 1) {
        return absl::DataLossError(absl::StrCat("calibration sample gemm_tile of shape ", s.m(),
                                                "x", s.n(), "x", s.k(),
                                                ": sizes must be positive"));
      }
      v1::GemmRate* r = profile->add_gemm_rates();
      r->set_m(s.m());
      r->set_n(s.n());
      r->set_k(s.k());
      r->set_flops_per_s(2.0 * s.m() * s.n() * s.k() / s.seconds());
    } else if (s.kind() == "copy" || s.kind() == "add" || s.kind() == "gather") {
      pass[s.kind()].first.push_back(static_cast<double>(s.bytes()));
      pass[s.kind()].second.push_back(s.seconds());
    }
  }
  for (const auto& [key, samples] : coll) {
    const Line line = FitNonNegative(samples.first, samples.second);
    v1::CollectiveFit* f = profile->add_collectives();
    f->set_kind(key.first);
    f->set_group(key.second);
    f->set_alpha_s(line.intercept);
    f->set_beta_s_per_byte(line.slope);
  }
  if (pass.count("copy") > 0)
    profile->set_copy_s_per_byte(FitNonNegative(pass["copy"].first, pass["copy"].second).slope);
  if (pass.count("gather") > 0) {
    profile->set_gather_s_per_byte(
        FitNonNegative(pass["gather"].first, pass["gather"].second).slope);
  }
  if (pass.count("add") > 0)
    profile->set_add_s_per_byte(FitNonNegative(pass["add"].first, pass["add"].second).slope);
  return absl::OkStatus();
}

// The line of a link between nodes: beta the least-squares slope over the messages of at
// least a sixteenth of the largest (its steady rate: a shaped or switched link sends a
// burst at the line's speed first, which bends a line through every size), alpha the
// median of the messages of at most 1 KiB less their bytes at that slope (its latency).
// FitNonNegative when fewer than two sizes are that large or none that small.
Line FitLink(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  const double largest = *std::max_element(bytes.begin(), bytes.end());
  std::vector<double> big_x, big_t, small_t;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] >= largest / 16) {
      big_x.push_back(bytes[i]);
      big_t.push_back(seconds[i]);
    }
  }
  const double n = static_cast<double>(big_x.size());
  double sx = 0, st = 0, sxx = 0, sxt = 0;
  for (size_t i = 0; i < big_x.size(); ++i) {
    sx += big_x[i];
    st += big_t[i];
    sxx += big_x[i] * big_x[i];
    sxt += big_x[i] * big_t[i];
  }
  const double det = n * sxx - sx * sx;
  if (big_x.size() < 2 || !(det > 0)) return FitNonNegative(bytes, seconds);
  Line line;
  line.slope = std::max(0.0, (n * sxt - sx * st) / det);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] <= 1024) small_t.push_back(std::max(0.0, seconds[i] - line.slope * bytes[i]));
  }
  if (small_t.empty()) return FitNonNegative(bytes, seconds);
  std::sort(small_t.begin(), small_t.end());
  line.intercept = small_t[small_t.size() / 2];
  return line;
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
    } else if (!IsTableKind(s.kind())) {
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
  profile.clear_collectives();
  profile.clear_gemm_rates();
  MT_RETURN_IF_ERROR(FitTables(measured, &profile));
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

absl::StatusOr<v1::InterNode> FitInterNode(const v1::HardwareProfile& measured, int64_t node_ranks,
                                           const std::string& source) {
  std::vector<double> bytes, seconds;
  for (int i = 0; i < measured.samples_size(); ++i) {
    const v1::CalibrationSample& s = measured.samples(i);
    if (s.kind() != "pingpong") continue;
    if (s.bytes() <= 0 || !(s.seconds() > 0) || !std::isfinite(s.seconds())) {
      return absl::DataLossError(absl::StrCat("calibration sample ", i, " (pingpong, ", s.bytes(),
                                              " bytes): seconds is ", s.seconds(),
                                              "; bytes and seconds must be positive and finite"));
    }
    bytes.push_back(s.bytes());
    seconds.push_back(s.seconds());
  }
  if (bytes.empty()) return absl::DataLossError("the calibration has no \"pingpong\" sample");
  const Line line = FitLink(bytes, seconds);
  v1::InterNode out;
  out.set_node_ranks(node_ranks);
  out.set_alpha_s(line.intercept);
  out.set_beta_s_per_byte(line.slope);
  out.set_source(source);
  return out;
}

}  // namespace meshtune::storage
