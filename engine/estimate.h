// A model-only estimate that depends on nothing but its request: the cost model's best
// schedule with the built-in machine numbers, for builds that must not read a hardware
// profile, a tuning database or the home directory (`meshtune codegen --estimate`).
#ifndef MESHTUNE_ENGINE_ESTIMATE_H_
#define MESHTUNE_ENGINE_ESTIMATE_H_

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The cost model's best schedule for `request` (problem, mesh or ranks, memory budget,
// seed, max_evaluations, allow_replication, split_distributed, rotation_steps,
// allow_idle_ranks; model_only is implied) with BuiltinCostParams(): a model-only search
// that reads no profile and no database, stores nothing and measures nothing; the winner
// is checked on the simulator as a model-only tune's is. The record has the problem, workload_mesh,
// mesh, trace (in the request's names), predicted_s, patterns and checked; no id, profile or
// machine. The same request gives the same record on every machine unless the search reaches its
// time budget (half of budget_s). Errors as a tune's: InvalidArgument for bad input,
// FailedPrecondition when no schedule is legal. A program of several statements gets its
// joint best (search/program_search.h), its trace a program trace.
absl::StatusOr<v1::Record> EstimateWithBuiltinNumbers(const v1::TuneRequest& request);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_ESTIMATE_H_
