// The tuner's options from a Tune request (what `meshtune tune`'s flags, the daemon's Tune
// RPC and the library ask for): the problem and the mesh (or a rank count), the machine
// numbers from a hardware profile or flags, the search's limits. Stateless; thread-safe.
#ifndef MESHTUNE_ENGINE_TUNE_TUNE_OPTIONS_H_
#define MESHTUNE_ENGINE_TUNE_TUNE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tune/machine_profile.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "proto/meshtune.pb.h"
#include "search/tuner.h"

namespace meshtune::engine {

// Machine numbers a tune takes over, or instead of, its profile's (what a Tune request
// cannot carry: `meshtune tune`'s flags, an in-process backend's settings).
struct MachineNumbers {
  std::optional<double> alpha, beta, gamma;  // override the profile (alpha, beta: all patterns)
  // These machine numbers instead of a profile's: no profile is read (alpha, beta and gamma
  // above still override them).
  std::optional<cost::CostParams> params;
};

// The in-place form (ir::InPlaceForm) of the request's problem with its layouts on its mesh.
// InvalidArgument without a mesh, and for a program of several statements
// (kInPlaceTakesOneStatement, engine/job.h); the parsers' errors; InPlaceForm's
// FailedPrecondition.
absl::StatusOr<ir::Problem> InPlaceProblem(const v1::TuneRequest& request);

// The tuner's options for `request`: the problem (its in-place form with in_place), the
// mesh (or every factorisation of `ranks`), the machine numbers of the profile ChooseProfile
// picks for its rank count (calibrating on first use unless request.no_calibrate; `warning`
// gets its note: engine/tune/machine_profile.h) under `numbers`, unset numbers at the CLI's
// defaults. InvalidArgument naming the bad field or token (messages use the CLI's flag names, e.g.
// "--ranks 1000000 is out of range"; both or neither of mesh and ranks); NotFound when a named
// profile does not exist. The problem is tuned without result_on_layer (the caller lowers the
// winner with it).
absl::StatusOr<search::TuneOptions> TuneOptionsFromRequest(const v1::TuneRequest& request,
                                                           std::string* warning,
                                                           const MachineNumbers& numbers = {});

// The same for the program `request` states, already read (engine/job.h, ProgramOf). A
// program of several statements takes no --in-place (kInPlaceTakesOneStatement).
absl::StatusOr<search::TuneOptions> TuneOptionsFor(const ir::StatementProgram& stated,
                                                   const v1::TuneRequest& request,
                                                   std::string* warning,
                                                   const MachineNumbers& numbers = {});

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_TUNE_OPTIONS_H_
