// Machine fingerprints: which machine, as the cost model and the measurements saw it, a
// tuning record was made for, so that a lookup can insist on records from this machine and
// a wisdom file carries where it came from.
#ifndef MESHTUNE_STORAGE_MACHINE_FINGERPRINT_H_
#define MESHTUNE_STORAGE_MACHINE_FINGERPRINT_H_

#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::storage {

// 16 lowercase hex characters: the start of the SHA-256 of the text
//   meshtune: <kTunerVersion>
//   profile: <ranks, ranks per node, cores, dtype, gemm_n, alpha, beta, alpha_coll,
//             beta_coll, gamma, overlap, printed exactly>
//   mpi: <the MPI library's version line>
//   blas: <OpenBLAS's configuration string>
// of `profile` (what `meshtune calibrate` measured and recorded), or, for nullptr, of the
// built-in numbers ("profile: built-in", no MPI or BLAS line). Not the host name or the
// time: nodes of one cluster, calibrated alike, share it. Recalibrating changes it when
// the numbers change.
std::string MachineFingerprint(const v1::HardwareProfile* profile);

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_MACHINE_FINGERPRINT_H_
