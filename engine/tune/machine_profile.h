// Which machine numbers a tune costs with: the hardware profile that answers for its rank
// count, calibrated on first use when none does, or built-in stand-ins.
//
// A tune that names no profile uses, for P ranks: the profile "default" when it was
// calibrated on P ranks; else the automatic profile "auto-P" when it was made on this host;
// else (FirstUse::kCalibrate) it calibrates one now, in the quick form (a few seconds), and
// stores it as "auto-P" with HardwareProfile.automatic set — `meshtune calibrate --ranks P`
// replaces it. A named profile is taken as it is. Thread-safe: calibrations on first use
// are serialized within a process.
#ifndef MESHTUNE_ENGINE_TUNE_MACHINE_PROFILE_H_
#define MESHTUNE_ENGINE_TUNE_MACHINE_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// What to do when no profile answers for a tune's rank count.
enum class FirstUse {
  kCalibrate,  // calibrate now (unless MESHTUNE_CALIBRATE=0 or the node cannot host the job)
  kBuiltin,    // use "default" of another rank count or the built-in numbers, with a note
};

// FirstUse::kBuiltin when the environment says MESHTUNE_CALIBRATE=0 (a machine where
// mpirun cannot run, a test suite whose figures must not depend on timing), else `wanted`.
FirstUse FirstUseFromEnvironment(FirstUse wanted);

// The most ranks a calibration on first use starts on this node: twice its cores (a
// quick calibration of more ranks than that spends minutes in oversubscribed waits).
int64_t MaxFirstUseRanks();

// The numbers a tune uses and where they came from.
struct ChosenProfile {
  cost::CostParams params;
  // The profile read or made ("" for the built-in numbers) and the profile itself.
  std::string name;
  std::optional<v1::HardwareProfile> profile;
  // One line for the user, "" when there is nothing to say: a profile calibrated now, the
  // built-in numbers standing in, a profile of another rank count, a calibration that failed.
  std::string note;
  bool calibrated_now = false;
};

// The profile a tune of `ranks` ranks (0: unknown) uses when it asks for `requested` (""
// for no profile named; see the file comment). NotFound when a named profile does not
// exist; LoadProfile's errors for a profile that cannot be read. A calibration that fails
// on first use is not an error: the built-in numbers are used and the note says why.
absl::StatusOr<ChosenProfile> ChooseProfile(const std::string& requested, int64_t ranks,
                                            FirstUse first_use);

// True when a profile answers for `ranks` ranks without calibrating: "default" calibrated on
// that many, or the automatic profile made on this host.
bool HasProfileFor(int64_t ranks);

// Fits `measured` (the samples of a calibration on `measured.ranks()` ranks, e.g. an
// application's communicator: runtime/launch/machine_bench.h), stores it as the automatic profile
// of that rank count and returns it chosen, with the note that says so (`seconds`: how long
// the measurement took). storage::FitProfile's and SaveProfile's errors.
absl::StatusOr<ChosenProfile> StoreFirstUseProfile(const v1::HardwareProfile& measured,
                                                   double seconds);

// The machine numbers used when no profile was calibrated (and none named): a typical
// node, alpha 1 us, 4 GB/s point-to-point, 2 GB/s in collectives, 30 GFLOP/s per rank,
// and no overlap credited to prefetch (unmeasured, it is not promised).
cost::CostParams BuiltinCostParams();

// The note for the user when BuiltinCostParams() stands in for the uncalibrated profile
// `profile`: "no hardware profile \"default\": using built-in machine numbers; run
// `meshtune calibrate --ranks P` for this machine's own numbers".
std::string BuiltinNumbersNote(const std::string& profile);

// The machine fingerprint (storage/machine_fingerprint.h) of the numbers a tune of `ranks`
// ranks asking for profile `name` ("" or "default": none named) uses, without calibrating:
// the chosen profile's, or the built-in numbers' when there is none; "" when the profile
// exists but cannot be read.
std::string ProfileMachine(const std::string& name, int64_t ranks = 0);

// The machine numbers ChooseProfile(profile, ranks, FirstUse::kBuiltin) gives ("default"
// is the same as ""). NotFound when another named profile does not exist; other errors as
// storage::LoadProfile's.
absl::StatusOr<cost::CostParams> ProfileCostParams(const std::string& profile, int64_t ranks = 0);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_MACHINE_PROFILE_H_
