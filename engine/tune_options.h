// The tuner's options from `meshtune tune`'s flags (and from Tune requests, through
// tune_messages.h): the problem and the mesh (or a rank count), the machine numbers from a
// hardware profile or flags, the search's limits. Stateless; thread-safe.
#ifndef MESHTUNE_ENGINE_TUNE_OPTIONS_H_
#define MESHTUNE_ENGINE_TUNE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "search/tuner.h"

namespace meshtune::engine {

// The parsed flags of `meshtune tune`.
struct TuneFlags {
  std::string expr, extents, dtype = "f32";
  std::string mesh;   // "x=2,y=2"; exactly one of mesh and ranks
  int64_t ranks = 0;  // every factorisation into 1 to 3 axes
  std::string mem_per_rank;
  int top_k = 4;
  double budget_s = 600;
  bool model_only = false;
  bool json = false;
  std::string profile = "default";           // hardware profile (storage/hardware_profile.h)
  bool profile_given = false;                // --profile was on the command line
  std::optional<double> alpha, beta, gamma;  // override the profile (alpha, beta: all patterns)
  // These machine numbers instead of a profile's: no profile is read (alpha, beta and gamma
  // above still override them).
  std::optional<search::CostParams> params;
  int64_t max_evaluations = 1000;
  uint64_t seed = 1;
  bool allow_replication = false;
  bool split_distributed = false;  // SpaceOptions::split_distributed
  bool rotation_steps = false;     // SpaceOptions::rotation_steps
  bool all_to_all = false;         // SpaceOptions::all_to_all
  bool allow_idle_ranks = false;   // with ranks: meshes of ceil(ranks/2) .. ranks ranks
  // `--layout TENSOR=SPEC`: where the application's tensors are (ir/layout.h).
  std::vector<std::string> layouts;
  // --in-place: tune the in-place form of the cyclic layouts (ir::InPlaceForm) instead.
  bool in_place = false;
  // Measurement.
  int reps = 3, warmup = 1;
  std::string worker, hostfile, launcher;
  std::vector<std::string> launcher_args;
  bool progress = false;  // draw progress on stderr (set when stderr is a terminal)
};

// The machine numbers used when no profile was calibrated (and none named): a typical
// node, alpha 1 us, 4 GB/s point-to-point, 2 GB/s in collectives, 30 GFLOP/s per rank,
// and no overlap credited to prefetch (unmeasured, it is not promised).
search::CostParams BuiltinCostParams();

// The note for the user when BuiltinCostParams() stands in for the uncalibrated profile
// `profile`: "no hardware profile \"default\": using built-in machine numbers; run
// `meshtune calibrate --ranks P` for this machine's own numbers".
std::string BuiltinNumbersNote(const std::string& profile);

// The machine fingerprint (storage/machine_fingerprint.h) of the hardware profile `name`
// ("default" when empty) as a tune uses it: the profile's, or the built-in numbers' when it
// does not exist; "" when it exists but cannot be read.
std::string ProfileMachine(const std::string& name);

// The machine numbers of the hardware profile `profile` ("" means "default"), resolved as a
// tune resolves them: the profile's own, or BuiltinCostParams() when the profile "default"
// was never calibrated. NotFound when another named profile does not exist; other errors
// as storage::LoadProfile's.
absl::StatusOr<search::CostParams> ProfileCostParams(const std::string& profile);

// The tuner's options from `flags`: InvalidArgument naming the bad flag or value (a bad
// expression, mesh, rank count, byte size, a budget or top-k out of range, both or neither
// of --mesh and --ranks); NotFound when a profile named with --profile does not exist.
// `warning` receives a note when the built-in numbers stand in for a missing default profile.
// The in-place form (ir::InPlaceForm) of the flags' problem with its layouts on --mesh.
// InvalidArgument without --mesh; the parsers' errors; InPlaceForm's FailedPrecondition.
absl::StatusOr<ir::Problem> InPlaceProblem(const TuneFlags& flags);

absl::StatusOr<search::TuneOptions> MakeTuneOptions(const TuneFlags& flags, std::string* warning);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_OPTIONS_H_
