// Hardware profiles: the alpha-beta-gamma numbers `meshtune calibrate` measured on one
// machine, stored by name as JSON files (meshtune.v1.HardwareProfile in protobuf's JSON
// mapping) under ProfileDir(), and turned into the cost model's CostParams.
// Thread-compatible; saving is atomic (a reader sees the old file or the new one).
#ifndef MESHTUNE_STORAGE_HARDWARE_PROFILE_H_
#define MESHTUNE_STORAGE_HARDWARE_PROFILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cost/cost_params.h"
#include "proto/meshtune.pb.h"

namespace meshtune::storage {

// The directory of the profiles: $MESHTUNE_HOME/profiles when MESHTUNE_HOME is set and not
// empty, else $HOME/.meshtune/profiles (the password database's home when HOME is unset).
std::string ProfileDir();

// OK when `name` has 1 to 64 characters, each a letter, digit, '_', '-' or '.';
// otherwise InvalidArgument quoting the name and, for a bad character, that character.
absl::Status ValidateProfileName(absl::string_view name);

// The file of the profile `name`: ProfileDir()/NAME.json (the name is not validated).
std::string ProfilePath(absl::string_view name);

// Reads the profile `name`, with its name field set to `name`. InvalidArgument for a bad
// name; NotFound `no hardware profile "NAME" in DIR; run meshtune calibrate --name NAME`
// when there is no such file; DataLoss naming the file when it does not parse or holds a
// negative or non-finite number; other read errors name the file too.
absl::StatusOr<v1::HardwareProfile> LoadProfile(absl::string_view name);

// Writes `profile` to ProfilePath(profile.name()), creating the directory when missing:
// to a temporary file in the directory first, then renamed over the old one. InvalidArgument
// for a bad name; errors from the file system name the path.
absl::Status SaveProfile(const v1::HardwareProfile& profile);

// Removes the profile `name`'s file; OK when there is none. InvalidArgument for a bad name;
// other errors name the path.
absl::Status RemoveProfile(absl::string_view name);

// The cost model's numbers from a profile (field for field; seconds, bytes, flops).
cost::CostParams ToCostParams(const v1::HardwareProfile& profile);

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_HARDWARE_PROFILE_H_
