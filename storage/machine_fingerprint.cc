#include "storage/machine_fingerprint.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/check.h"
#include "storage/sha256.h"
#include "storage/tuning_db.h"

namespace meshtune::storage {

std::string MachineFingerprint(const v1::HardwareProfile* profile) {
  std::string text = absl::StrCat("meshtune: ", kTunerVersion, "\n");
  if (profile == nullptr) {
    absl::StrAppend(&text, "profile: built-in\n");
  } else {
    const v1::HardwareProfile& p = *profile;
    absl::StrAppend(&text,
                    absl::StrFormat("profile: ranks=%d ranks_per_node=%d cores=%d dtype=%s "
                                    "gemm_n=%d alpha=%.17g beta=%.17g alpha_coll=%.17g "
                                    "beta_coll=%.17g gamma=%.17g overlap=%.17g\n",
                                    p.ranks(), p.ranks_per_node(), p.cores(), p.dtype(), p.gemm_n(),
                                    p.alpha_s(), p.beta_s_per_byte(), p.alpha_coll_s(),
                                    p.beta_coll_s_per_byte(), p.gamma_s_per_flop(), p.overlap()),
                    "mpi: ", p.mpi_library(), "\nblas: ", p.blas_config(), "\n");
  }
  const absl::StatusOr<std::string> hex = Sha256Hex(text);
  MT_CHECK(hex.ok());  // OpenSSL's SHA-256 does not fail on a valid input
  return hex->substr(0, 16);
}

}  // namespace meshtune::storage
