// The tuner: from a program of statements and a mesh (or a rank count) to the fastest
// verified schedule. A statement is a program of one, tuned as drawn here; a program of
// several has each statement searched so, and the layouts between them chosen together
// (search/program_search.h).
//
//   problem + meshes ─▶ Explorer::Create ── per mesh a Space; per (nest, rotation) every
//        │              tensor option judged (closed forms, isl outside them)
//        │              ──▶ enumerated / legal / pruned{reason}
//        ▼
//   SearchStrategy (exhaustive if the legal points fit, else evolutionary)
//        │   Explorer::Evaluate: assemble ─▶ closed-form Program (isl outside the forms)
//        │                       ─▶ cost::EstimateCost  (dedup by Program)
//        ▼
//   K to measure + the library ──▶ Runner::RunSideBySide (mpirun: one job in rounds,
//        │   verify + time; model-only: nothing) (Explorer::ToMeasure: each mesh's best,
//        │   each family's best near the top, then the model's order); a run below the
//        │   machine's floor measured again, then refused (search/plausibility.h)
//        ▼
//   winner: by search/decision.h (the fastest schedule, a tie within noise said so; the
//   library unless that schedule beats it beyond the noise); with no runner or no verified run, the
//   model's best that the Checker verifies in the mesh simulator (measured_s empty,
//   verified false, checked "simulated" or "simulated-scaled"); a candidate the checker
//   refuses is counted and never returned
//
// Side effects hang off the loop as TuneCallbacks (progress display, logging, storing), so
// the loop does not change when one is added. Tune runs on the calling thread.
#ifndef MESHTUNE_SEARCH_TUNER_H_
#define MESHTUNE_SEARCH_TUNER_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "search/runner.h"
#include "search/tune_types.h"

namespace meshtune::search {

// InvalidArgument "no mesh to tune for", "top-k must be >= 0, got K" or "the budget must be
// a positive number of seconds, got B" — what a tune of a statement or a program refuses.
absl::Status CheckTuneLimits(size_t meshes, int top_k, double budget_s);

// Tunes `options.program`. InvalidArgument for bad options (no statement, no mesh, top_k < 0,
// a mesh that clashes with the problem's names); FailedPrecondition "no legal schedule ..." when
// the space has no legal point (the message gives the prune counts), or when no candidate
// measured or passed the checker (the message gives the first refusal); Cancelled when
// `cancelled` fired before a result. Measurement failures are in the measurements.
absl::StatusOr<SearchResult> Tune(const TuneOptions& options, Runner& runner,
                                  const std::vector<SearchCallback*>& callbacks = {});

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_TUNER_H_
