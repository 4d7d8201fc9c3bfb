// Hardware profiles: names, the directory, save/load round trip and the errors.
#include "storage/hardware_profile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

namespace meshtune::storage {
namespace {

class HardwareProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    home_ = std::string(tmp ? tmp : "/tmp") + "/hp_home_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    setenv("MESHTUNE_HOME", home_.c_str(), 1);
  }
  std::string home_;
};

v1::HardwareProfile Sample(const std::string& name) {
  v1::HardwareProfile p;
  p.set_name(name);
  p.set_ranks(4);
  p.set_alpha_s(1.5e-6);
  p.set_beta_s_per_byte(1e-10);
  p.set_alpha_coll_s(2.5e-6);
  p.set_beta_coll_s_per_byte(2e-10);
  p.set_gamma_s_per_flop(3e-11);
  p.set_dtype("f32");
  p.set_host("node1");
  p.set_created("2024-01-02T03:04:05Z");
  p.set_gemm_n(512);
  v1::CalibrationSample* s = p.add_samples();
  s->set_kind("pingpong");
  s->set_bytes(int64_t{1} << 40);
  s->set_seconds(0.25);
  return p;
}

TEST_F(HardwareProfileTest, DirectoryFollowsMeshtuneHomeThenHome) {
  EXPECT_EQ(ProfileDir(), home_ + "/profiles");
  EXPECT_EQ(ProfilePath("x"), home_ + "/profiles/x.json");
  setenv("MESHTUNE_HOME", "", 1);
  setenv("HOME", "/somewhere", 1);
  EXPECT_EQ(ProfileDir(), "/somewhere/.meshtune/profiles");
}

TEST_F(HardwareProfileTest, ValidNames) {
  for (const std::string& name : {std::string("default"), std::string("a"),
                                  std::string("node-1_f32.v2"), std::string(64, 'x')}) {
    EXPECT_TRUE(ValidateProfileName(name).ok()) << name;
  }
}

TEST_F(HardwareProfileTest, InvalidNamesSayWhy) {
  EXPECT_EQ(ValidateProfileName("a/b").message(),
            "invalid hardware profile name \"a/b\": character '/' is not allowed (letters, digits, "
            "'_', '-' and '.' "
            "are)");
  EXPECT_EQ(ValidateProfileName("my profile").message(),
            "invalid hardware profile name \"my profile\": character ' ' is not allowed (letters, "
            "digits, '_', '-' "
            "and '.' are)");
  EXPECT_EQ(ValidateProfileName("").message(),
            "invalid hardware profile name \"\": it has 0 characters; a name has 1 to 64");
  EXPECT_EQ(ValidateProfileName(std::string(65, 'y')).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateProfileName("tab\there").message(),
            "invalid hardware profile name \"tab\\there\": character '\\t' is not allowed "
            "(letters, digits, '_', "
            "'-' and '.' are)");
}

TEST_F(HardwareProfileTest, SaveThenLoadRoundTrips) {
  const v1::HardwareProfile saved = Sample("round-trip");
  ASSERT_TRUE(SaveProfile(saved).ok());  // creates $MESHTUNE_HOME/profiles
  absl::StatusOr<v1::HardwareProfile> loaded = LoadProfile("round-trip");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->SerializeAsString(), saved.SerializeAsString());

  v1::HardwareProfile changed = saved;
  changed.set_alpha_s(9e-6);
  ASSERT_TRUE(SaveProfile(changed).ok());  // replaces the file
  EXPECT_EQ(LoadProfile("round-trip")->alpha_s(), 9e-6);

  const cost::CostParams params = ToCostParams(*loaded);
  EXPECT_EQ(params.alpha, 1.5e-6);
  EXPECT_EQ(params.beta, 1e-10);
  EXPECT_EQ(params.alpha_coll, 2.5e-6);
  EXPECT_EQ(params.beta_coll, 2e-10);
  EXPECT_EQ(params.gamma, 3e-11);
}

TEST_F(HardwareProfileTest, MissingProfileIsNotFound) {
  const absl::StatusOr<v1::HardwareProfile> p = LoadProfile("nope");
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(p.status().message(), "no hardware profile \"nope\" in " + home_ +
                                      "/profiles; run meshtune calibrate --name nope");
}

TEST_F(HardwareProfileTest, BadNamesAreRefusedBeforeTouchingFiles) {
  EXPECT_EQ(LoadProfile("../etc/passwd").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SaveProfile(Sample("a/b")).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HardwareProfileTest, CorruptFilesNameTheFile) {
  ASSERT_TRUE(SaveProfile(Sample("bad")).ok());
  const std::string path = ProfilePath("bad");
  std::ofstream(path) << "{\"alpha_s\": ";
  absl::StatusOr<v1::HardwareProfile> p = LoadProfile("bad");
  EXPECT_EQ(p.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(p.status().message().find("cannot parse the hardware profile " + path + ": "),
            absl::string_view::npos)
      << p.status();

  std::ofstream(path) << "{\"alpha_s\": -1e-6}";
  p = LoadProfile("bad");
  EXPECT_EQ(p.status().message(),
            "hardware profile " + path + ": alpha_s is -1e-06; it must be finite and >= 0");

  std::ofstream(path) << "{\"overlap\": 1.5}";
  p = LoadProfile("bad");
  EXPECT_EQ(p.status().message(),
            "hardware profile " + path + ": overlap is 1.5; it must be at most 1");

  std::ofstream(path) << "{\"copy_s_per_byte\": -2}";
  EXPECT_EQ(LoadProfile("bad").status().message(),
            "hardware profile " + path + ": copy_s_per_byte is -2; it must be finite and >= 0");
  std::ofstream(path) << "{\"collectives\": [{\"kind\": \"gather\", \"group\": 2}]}";
  EXPECT_EQ(LoadProfile("bad").status().message(),
            "hardware profile " + path + ": unknown collective \"gather\"");
  std::ofstream(path) << "{\"collectives\": [{\"kind\": \"ireduce\", \"group\": 1}]}";
  EXPECT_EQ(LoadProfile("bad").status().message(),
            "hardware profile " + path +
                ": collective fit ireduce over 1 ranks: a group has at least 2 ranks");
  std::ofstream(path) << "{\"gemm_rates\": [{\"m\": 8, \"n\": 8, \"k\": 8, "
                         "\"flops_per_s\": 1e9}, {\"m\": 16, \"n\": 8, \"k\": 8, "
                         "\"flops_per_s\": 2e9}, {\"m\": 8, \"n\": 16, \"k\": 8, "
                         "\"flops_per_s\": 2e9}]}";
  EXPECT_EQ(LoadProfile("bad").status().message(),
            "hardware profile " + path +
                ": the GEMM rates do not form a full grid: shape 16x16x8 is missing");
  std::ofstream(path) << "{\"term_scales\": {\"compute\": 1, \"point_to_point\": 2, "
                         "\"collective\": 0, \"reduction\": 1}}";
  EXPECT_EQ(
      LoadProfile("bad").status().message(),
      "hardware profile " + path + ": term_scales.collective is 0; it must be finite and > 0");
  std::ofstream(path) << "{\"term_scales\": {\"compute\": 1, \"point_to_point\": 2, "
                         "\"collective\": 1, \"reduction\": 1, \"message_s\": -1e-06}}";
  EXPECT_EQ(
      LoadProfile("bad").status().message(),
      "hardware profile " + path + ": term_scales.message_s is -1e-06; it must be finite and >= 0");
  std::ofstream(path) << "{\"inter_node\": {\"node_ranks\": 0, \"alpha_s\": 1e-6}}";
  EXPECT_EQ(LoadProfile("bad").status().message(),
            "hardware profile " + path +
                ": inter_node has node_ranks 0, alpha_s 1e-06 and beta_s_per_byte 0; it needs "
                "node_ranks >= 1 and finite, non-negative numbers");
}

TEST(ToCostParamsTest, CarriesEveryNumberIncludingOverlap) {
  v1::HardwareProfile p = Sample("x");
  p.set_overlap(0.25);
  p.set_cores(2);
  p.set_ranks_per_node(4);
  const cost::CostParams c = ToCostParams(p);
  EXPECT_EQ(c.alpha, 1.5e-6);
  EXPECT_EQ(c.beta, 1e-10);
  EXPECT_EQ(c.alpha_coll, 2.5e-6);
  EXPECT_EQ(c.beta_coll, 2e-10);
  EXPECT_EQ(c.gamma, 3e-11);
  EXPECT_EQ(c.overlap, 0.25);
  EXPECT_EQ(c.cores, 2);
  EXPECT_EQ(c.ranks_per_node, 4);
  EXPECT_TRUE(c.gemm.Empty());  // a profile from before the tables: gamma, alpha_coll ...
  EXPECT_TRUE(c.collectives.Empty());
  // No term scales: 1 each; fitted ones as stored.
  EXPECT_EQ(c.scales.compute, 1);
  EXPECT_EQ(c.scales.point_to_point, 1);
  EXPECT_EQ(c.scales.collective, 1);
  EXPECT_EQ(c.scales.reduction, 1);
  EXPECT_EQ(c.scales.message, 0);
  v1::TermScales* k = p.mutable_term_scales();
  k->set_compute(1.1);
  k->set_point_to_point(1.7);
  k->set_collective(0.9);
  k->set_reduction(2.5);
  k->set_message_s(4e-5);
  const cost::CostParams scaled = ToCostParams(p);
  EXPECT_EQ(scaled.scales.compute, 1.1);
  EXPECT_EQ(scaled.scales.point_to_point, 1.7);
  EXPECT_EQ(scaled.scales.collective, 0.9);
  EXPECT_EQ(scaled.scales.reduction, 2.5);
  EXPECT_EQ(scaled.scales.message, 4e-5);
}

TEST(ToCostParamsTest, CarriesTheCollectivesGemmRatesAndMemoryPasses) {
  v1::HardwareProfile p = Sample("x");
  p.set_copy_s_per_byte(5e-11);
  p.set_add_s_per_byte(7e-11);
  for (const auto& [kind, group] :
       {std::pair<const char*, int>{"allgather", 2}, {"iallgather", 2}, {"allgather", 4}}) {
    v1::CollectiveFit* f = p.add_collectives();
    f->set_kind(kind);
    f->set_group(group);
    f->set_alpha_s(group * 1e-6 + (kind[0] == 'i' ? 1e-6 : 0));
    f->set_beta_s_per_byte(1e-10);
  }
  for (int m : {8, 64}) {
    for (int n : {8, 64}) {
      for (int k : {8, 64}) {
        v1::GemmRate* r = p.add_gemm_rates();
        r->set_m(m);
        r->set_n(n);
        r->set_k(k);
        r->set_flops_per_s(1e6 * m * n + k);
      }
    }
  }
  const cost::CostParams c = ToCostParams(p);
  EXPECT_EQ(c.copy, 5e-11);
  EXPECT_EQ(c.add, 7e-11);
  EXPECT_DOUBLE_EQ(c.collectives.Seconds(cost::Collective::kAllGather, 2, 100), 2e-6 + 1e-8);
  EXPECT_DOUBLE_EQ(c.collectives.Seconds(cost::Collective::kAllGather, 4, 100), 4e-6 + 1e-8);
  EXPECT_DOUBLE_EQ(c.collectives.Seconds(cost::Collective::kAllGather, 2, 100, true), 3e-6 + 1e-8);
  EXPECT_DOUBLE_EQ(c.gemm.Rate(64, 8, 64), 1e6 * 64 * 8 + 64);
  EXPECT_DOUBLE_EQ(c.gemm.Rate(8, 8, 8), 1e6 * 64 + 8);
}

}  // namespace
}  // namespace meshtune::storage
