// Machine fingerprints: stable for the same numbers, different when any part differs.
#include "storage/machine_fingerprint.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace meshtune::storage {
namespace {

v1::HardwareProfile Profile() {
  v1::HardwareProfile p;
  p.set_name("default");
  p.set_ranks(4);
  p.set_ranks_per_node(4);
  p.set_cores(2);
  p.set_dtype("f32");
  p.set_gemm_n(1024);
  p.set_alpha_s(4e-6);
  p.set_beta_s_per_byte(2.5e-10);
  p.set_alpha_coll_s(1e-7);
  p.set_beta_coll_s_per_byte(2.5e-10);
  p.set_gamma_s_per_flop(2e-11);
  p.set_mpi_library("Open MPI v4.1.4");
  p.set_blas_config("OpenBLAS 0.3.21 DYNAMIC_ARCH");
  return p;
}

TEST(MachineFingerprintTest, SameNumbersSameFingerprintAnyPartChangesIt) {
  const v1::HardwareProfile base = Profile();
  const std::string fp = MachineFingerprint(&base);
  EXPECT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos) << fp;
  v1::HardwareProfile renamed = base;  // name, host and time are not the machine
  renamed.set_name("other");
  renamed.set_host("node7");
  renamed.set_created("2026-01-01T00:00:00Z");
  EXPECT_EQ(MachineFingerprint(&renamed), fp);

  std::set<std::string> seen = {fp, MachineFingerprint(nullptr)};
  EXPECT_EQ(seen.size(), 2u);  // the built-in numbers are another machine
  v1::HardwareProfile p = base;
  p.set_gamma_s_per_flop(2.1e-11);
  seen.insert(MachineFingerprint(&p));
  p = base;
  p.set_mpi_library("Open MPI v5.0.0");
  seen.insert(MachineFingerprint(&p));
  p = base;
  p.set_blas_config("OpenBLAS 0.3.26");
  seen.insert(MachineFingerprint(&p));
  p = base;
  p.set_cores(4);
  seen.insert(MachineFingerprint(&p));
  p = base;
  p.set_overlap(0.5);
  seen.insert(MachineFingerprint(&p));
  EXPECT_EQ(seen.size(), 7u);
}

}  // namespace
}  // namespace meshtune::storage
