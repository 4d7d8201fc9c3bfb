// The calibration's fits (FitProfile, FitInterNode) on synthetic samples, without MPI.
#include "storage/calibration_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace meshtune::storage {
namespace {

void Add(v1::HardwareProfile* p, const std::string& kind, int64_t bytes, double seconds) {
  v1::CalibrationSample* s = p->add_samples();
  s->set_kind(kind);
  s->set_bytes(bytes);
  s->set_seconds(seconds);
}

// Exact samples of t = alpha + beta * bytes (ping-pong) and alpha_coll * log2(4) +
// beta_coll * bytes (broadcast) on 4 ranks, and a 100 x 100 x 100 GEMM of 2e-3 s.
v1::HardwareProfile Exact() {
  v1::HardwareProfile p;
  p.set_ranks(4);
  p.set_gemm_n(100);
  for (int64_t b = 8; b <= (1 << 20); b *= 4) {
    Add(&p, "pingpong", b, 1e-6 + 2e-10 * b);
    Add(&p, "bcast", b, 3e-6 * 2 + 5e-10 * b);
  }
  Add(&p, "gemm", 3 * 4 * 100 * 100, 2e-3);
  return p;
}

TEST(FitProfileTest, RecoversExactLines) {
  const absl::StatusOr<v1::HardwareProfile> p = FitProfile(Exact());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->alpha_s(), 1e-6, 1e-15);
  EXPECT_NEAR(p->beta_s_per_byte(), 2e-10, 1e-19);
  EXPECT_NEAR(p->alpha_coll_s(), 3e-6, 1e-15);  // per tree level: log2(4) = 2 levels
  EXPECT_NEAR(p->beta_coll_s_per_byte(), 5e-10, 1e-19);
  EXPECT_DOUBLE_EQ(p->gamma_s_per_flop(), 2e-3 / 2e6);
  EXPECT_EQ(p->samples_size(), Exact().samples_size());  // the samples are kept
}

// The link between nodes: a line over the ping-pong samples alone (the other kinds of a
// full calibration are ignored), with the node size and source given; none is DataLoss.
TEST(FitInterNodeTest, FitsThePingPongLine) {
  v1::HardwareProfile measured;
  for (int64_t b = 8; b <= (1 << 20); b *= 4) Add(&measured, "pingpong", b, 4e-6 + 1e-9 * b);
  Add(&measured, "bcast", 8, 1.0);
  const absl::StatusOr<v1::InterNode> link = FitInterNode(measured, 8, "measured here");
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_NEAR(link->alpha_s(), 4e-6, 1e-15);
  EXPECT_NEAR(link->beta_s_per_byte(), 1e-9, 1e-18);
  EXPECT_EQ(link->node_ranks(), 8);
  EXPECT_EQ(link->source(), "measured here");
  v1::HardwareProfile none;
  Add(&none, "bcast", 8, 1e-6);
  EXPECT_EQ(FitInterNode(none, 8, "").status(),
            absl::DataLossError("the calibration has no \"pingpong\" sample"));
  Add(&none, "pingpong", 8, -1);
  EXPECT_EQ(FitInterNode(none, 8, "").status().message(),
            "calibration sample 1 (pingpong, 8 bytes): seconds is -1; bytes and seconds must be "
            "positive and finite");
}

// A link shaped by a token bucket (tc tbf) sends its first 128 KiB at the line's speed
// and the rest at the bucket's rate: beta is the rate, not a line bent through the burst,
// and alpha the small messages' latency.
TEST(FitInterNodeTest, AShapedLinksBetaIsItsRatePastTheBurst) {
  v1::HardwareProfile measured;
  const double latency = 7e-6, line = 1 / 2e9, rate = 1 / 125e6, burst = 128 << 10;
  for (int64_t b = 8; b <= (16 << 20); b *= 2) {
    const double t = b <= burst ? latency + b * line : latency + burst * line + (b - burst) * rate;
    Add(&measured, "pingpong", b, t);
  }
  const absl::StatusOr<v1::InterNode> link = FitInterNode(measured, 1, "tbf");
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_NEAR(link->beta_s_per_byte(), rate, rate * 1e-9);
  EXPECT_NEAR(link->alpha_s(), latency, 1e-6);
}

TEST(FitProfileTest, RingExchangeGivesThePointToPointNumbers) {
  // Schedules send on every rank at once: with "shift" samples, alpha and beta are theirs.
  v1::HardwareProfile measured = Exact();
  for (int64_t b = 8; b <= (1 << 20); b *= 4) Add(&measured, "shift", b, 4e-6 + 8e-10 * b);
  const absl::StatusOr<v1::HardwareProfile> p = FitProfile(measured);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->alpha_s(), 4e-6, 1e-15);
  EXPECT_NEAR(p->beta_s_per_byte(), 8e-10, 1e-19);
  EXPECT_NEAR(p->beta_coll_s_per_byte(), 5e-10, 1e-19);
}

TEST(FitProfileTest, WeighsSamplesByRelativeError) {
  // A 10% outlier at the largest size moves an unweighted fit's intercept by far more
  // than alpha; in relative error the small messages still pin alpha down.
  v1::HardwareProfile measured = Exact();
  for (v1::CalibrationSample& s : *measured.mutable_samples()) {
    if (s.kind() == "pingpong" && s.bytes() == (1 << 20)) s.set_seconds(s.seconds() * 1.1);
  }
  const absl::StatusOr<v1::HardwareProfile> p = FitProfile(measured);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->alpha_s(), 0.8e-6);
  EXPECT_LT(p->alpha_s(), 1.2e-6);
}

TEST(FitProfileTest, OverlapIsWhatRunningBothTogetherSavesOfTheShorter) {
  EXPECT_EQ(FitProfile(Exact())->overlap(), 0);  // a profile from before the measurement
  // G = 4 ms, S = 2 ms: together in 6 ms hide nothing, in 4 ms all of S, in 5 ms half.
  for (const auto& [both, expected] :
       {std::pair{6e-3, 0.0}, {4e-3, 1.0}, {5e-3, 0.5}, {7e-3, 0.0}, {3e-3, 1.0}}) {
    SCOPED_TRACE(both);
    v1::HardwareProfile measured = Exact();
    Add(&measured, "overlap_gemm", 3 * 4 * 256 * 256, 4e-3);
    Add(&measured, "overlap_shift", 1 << 22, 2e-3);
    Add(&measured, "overlap_both", 1 << 22, both);
    const absl::StatusOr<v1::HardwareProfile> p = FitProfile(measured);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_NEAR(p->overlap(), expected, 1e-12);
  }
  v1::HardwareProfile partial = Exact();
  Add(&partial, "overlap_gemm", 3 * 4 * 256 * 256, 4e-3);
  Add(&partial, "overlap_both", 1 << 22, 5e-3);
  EXPECT_EQ(FitProfile(partial).status().message(),
            "the calibration has 0 \"overlap_shift\" samples; one is needed");
}

TEST(FitProfileTest, CoefficientsAreNeverNegative) {
  v1::HardwareProfile falling;  // times that fall with size: no bandwidth term
  falling.set_ranks(2);
  falling.set_gemm_n(16);
  Add(&falling, "pingpong", 8, 4e-6);
  Add(&falling, "pingpong", 1024, 2e-6);
  Add(&falling, "bcast", 8, 3e-6);
  Add(&falling, "bcast", 1024, 3e-6);  // flat
  Add(&falling, "bcast", 1 << 20, 3e-6);
  Add(&falling, "gemm", 3 * 4 * 16 * 16, 1e-6);
  absl::StatusOr<v1::HardwareProfile> p = FitProfile(falling);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->beta_s_per_byte(), 0);
  EXPECT_GT(p->alpha_s(), 2e-6);  // the weighted mean
  EXPECT_LT(p->alpha_s(), 4e-6);
  EXPECT_NEAR(p->alpha_coll_s(), 3e-6, 1e-15);
  EXPECT_NEAR(p->beta_coll_s_per_byte(), 0, 1e-20);

  v1::HardwareProfile proportional = falling;  // t = 1e-9 * bytes, the 8-byte one faster
  proportional.clear_samples();
  Add(&proportional, "pingpong", 1024, 1.024e-6);
  Add(&proportional, "pingpong", 8192, 8.192e-6);
  Add(&proportional, "pingpong", 8, 1e-9);
  Add(&proportional, "bcast", 8, 1e-6);
  Add(&proportional, "gemm", 3 * 4 * 16 * 16, 1e-6);
  p = FitProfile(proportional);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->alpha_s(), 0);
  EXPECT_GT(p->beta_s_per_byte(), 0);
}

// Exact samples of each collective per group size, GEMM tiles on a 2 x 2 x 2 grid and the
// memory passes: each line, rate and per-byte time recovered.
TEST(FitProfileTest, RecoversCollectiveLinesGemmRatesAndMemoryPasses) {
  v1::HardwareProfile measured = Exact();
  for (const char* kind : {"bcast", "reduce", "allgather", "reduce_scatter", "allreduce", "ibcast",
                           "ireduce", "iallgather", "ireduce_scatter", "iallreduce"}) {
    for (int group : {2, 4}) {
      const double alpha = (kind[0] == 'i' ? 2e-6 : 1e-6) * group;
      const double beta = (kind[0] == 'i' ? 3e-10 : 1e-10) * group;
      for (int64_t b = 64; b <= (1 << 22); b *= 4) {
        Add(&measured, std::string("coll_") + kind, b, alpha + beta * b);
        measured.mutable_samples(measured.samples_size() - 1)->set_group(group);
      }
    }
  }
  for (int m : {16, 256}) {
    for (int n : {16, 256}) {
      for (int k : {16, 256}) {
        Add(&measured, "gemm_tile", 4 * (m * k + k * n + m * n), 2.0 * m * n * k / (1e9 * (m + n)));
        v1::CalibrationSample* s = measured.mutable_samples(measured.samples_size() - 1);
        s->set_m(m);
        s->set_n(n);
        s->set_k(k);
      }
    }
  }
  for (int64_t b = 1 << 18; b <= (1 << 24); b *= 4) {
    Add(&measured, "copy", b, 2e-6 + 5e-11 * b);
    Add(&measured, "add", b, 1e-6 + 8e-11 * b);
  }
  const absl::StatusOr<v1::HardwareProfile> p = FitProfile(measured);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->collectives_size(), 20);
  for (const v1::CollectiveFit& f : p->collectives()) {
    SCOPED_TRACE(f.kind() + " over " + std::to_string(f.group()));
    EXPECT_NEAR(f.alpha_s(), (f.kind()[0] == 'i' ? 2e-6 : 1e-6) * f.group(), 1e-15);
    EXPECT_NEAR(f.beta_s_per_byte(), (f.kind()[0] == 'i' ? 3e-10 : 1e-10) * f.group(), 1e-19);
  }
  ASSERT_EQ(p->gemm_rates_size(), 8);
  for (const v1::GemmRate& r : p->gemm_rates())
    EXPECT_NEAR(r.flops_per_s(), 1e9 * (r.m() + r.n()), 1e-3) << r.m() << "x" << r.n();
  EXPECT_NEAR(p->copy_s_per_byte(), 5e-11, 1e-20);
  EXPECT_NEAR(p->add_s_per_byte(), 8e-11, 1e-20);
  // The old numbers are fitted as before.
  EXPECT_NEAR(p->alpha_s(), 1e-6, 1e-15);
  EXPECT_NEAR(p->beta_coll_s_per_byte(), 5e-10, 1e-19);
  // Fitting a fitted profile again gives the same tables (they are not appended twice).
  const absl::StatusOr<v1::HardwareProfile> again = FitProfile(*p);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->collectives_size(), 20);
  EXPECT_EQ(again->gemm_rates_size(), 8);
}

TEST(FitProfileTest, UnusableTableSamplesAreDataLoss) {
  v1::HardwareProfile p = Exact();
  Add(&p, "coll_gather", 64, 1e-6);
  p.mutable_samples(p.samples_size() - 1)->set_group(2);
  EXPECT_EQ(FitProfile(p).status().message(),
            "calibration sample \"coll_gather\" over 2 ranks: not a collective of 2 or more ranks");
  p = Exact();
  Add(&p, "coll_reduce", 64, 1e-6);  // no group
  EXPECT_EQ(FitProfile(p).status().message(),
            "calibration sample \"coll_reduce\" over 0 ranks: not a collective of 2 or more ranks");
  p = Exact();
  Add(&p, "gemm_tile", 64, 1e-6);  // no shape
  EXPECT_EQ(FitProfile(p).status().message(),
            "calibration sample gemm_tile of shape 0x0x0: sizes must be positive");
}

TEST(FitProfileTest, UnusableSamplesAreDataLoss) {
  v1::HardwareProfile p = Exact();
  p.mutable_samples(2)->set_seconds(0);
  EXPECT_EQ(FitProfile(p).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(FitProfile(p).status().message(),
            "calibration sample 2 (pingpong, 32 bytes): seconds is 0; bytes and seconds must be "
            "positive and "
            "finite");

  p = Exact();
  p.mutable_samples(0)->set_seconds(std::nan(""));
  EXPECT_EQ(FitProfile(p).status().code(), absl::StatusCode::kDataLoss);

  p = Exact();
  p.mutable_samples()->RemoveLast();  // the gemm sample
  EXPECT_EQ(FitProfile(p).status().message(),
            "the calibration has 0 \"gemm\" samples; one is needed");

  p = Exact();
  p.mutable_samples(1)->set_kind("allreduce");
  EXPECT_EQ(FitProfile(p).status().message(),
            "calibration sample 1 (allreduce, 8 bytes): unknown kind \"allreduce\"");

  p = Exact();
  p.set_ranks(1);
  EXPECT_EQ(FitProfile(p).status().message(),
            "the calibration ran on 1 ranks; at least 2 are needed");

  v1::HardwareProfile only_gemm;
  only_gemm.set_ranks(2);
  only_gemm.set_gemm_n(16);
  Add(&only_gemm, "gemm", 3 * 4 * 16 * 16, 1e-6);
  EXPECT_EQ(FitProfile(only_gemm).status().message(), "the calibration has no \"pingpong\" sample");
}

}  // namespace
}  // namespace meshtune::storage
