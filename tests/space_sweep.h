// Space sweeps: every legal point of a schedule space (or a seeded sample of them), as a
// user would run it — the trace replayed and judged afresh, lowered with offsets, and run
// on every rank by the mesh simulator against the reference. The property behind
// "a schedule called legal computes the right answer", used by the suite's test and by
// the wider sweep target. Thread-compatible.
#ifndef MESHTUNE_TESTS_SPACE_SWEEP_H_
#define MESHTUNE_TESTS_SPACE_SWEEP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/computation.h"

namespace meshtune::testing {

// One space: a problem, its extents and a mesh, with or without replicated layouts.
struct SweepCase {
  std::string expr, extents, mesh;
  bool allow_replication = false;
  // `--layout` flags: the tensors' given layouts (ir/layout.h); none: every tensor block.
  std::vector<std::string> layouts = {};
  // The space with its distributed indices split further (SpaceOptions::split_distributed).
  bool split_distributed = false;
  // Rotations in steps other than 1 (SpaceOptions::rotation_steps).
  bool rotation_steps = false;
  // Transfers from several ranks' shards, as all-to-all exchanges (SpaceOptions::all_to_all).
  bool all_to_all = false;
  // Only the points that communicate the output at a rotated loop (ir/ring.h: those whose
  // partial sums pass around a ring, and the others), all of them or a sample.
  bool rings_only = false;
  // The output's result left on one layer where copied (ir::Problem::result_on_layer).
  bool result_on_layer = false;
  // "C[m,n] += A[m,k] * B[k,n] m=4,n=4,k=6 on x=2 (replication) (split) (steps) (all-to-all)
  // (rings)"
  std::string Name() const;
};

struct SweepFailure {
  std::string trace;
  std::string error;
};

struct SweepResult {
  int64_t legal_points = 0;       // legal points of the space
  int64_t checked = 0;            // of which checked (all, or the sample)
  int64_t prefetched = 0;         // checked points that prefetch (communicate ... prefetch=1)
  int64_t stepped = 0;            // checked points that rotate in steps (step=N)
  int64_t all_to_all = 0;         // checked points with an all-to-all transfer
  int64_t onto_layer = 0;         // checked points whose output ends on one layer
  int64_t rings = 0;              // checked points whose output passes around a ring
  int64_t distinct_programs = 0;  // distinct lowered Programs among the checked
  int64_t unlowerable = 0;        // legal but lowering declined (Unimplemented): never run
  // Why lowering declined, by reason ("the data of a transfer is not a box of fixed size").
  std::map<std::string, int64_t> unlowerable_reasons;
  std::vector<SweepFailure> failures;  // checked points that did not verify
};

// An extra check of each lowered program (e.g. translation validation); "" when it passes.
using ProgramCheck = std::function<std::string(const ir::Computation&, const codegen::Program&)>;

// Sweeps `c`: all legal points when there are at most `max_points`, else a sample of
// `max_points` drawn with `seed`. Each point's trace is judged afresh (it must be legal),
// lowered with offsets, translation-validated (codegen::LowerValidated: an unsound or
// unvalidated Program is a failure) and simulated; failures name the trace and the error. Also runs
// `check` on each program when set. InvalidArgument for a malformed case.
absl::StatusOr<SweepResult> SweepSpace(const SweepCase& c, int64_t max_points, uint64_t seed,
                                       const ProgramCheck& check = nullptr);

// The legal points `SweepSpace` checks, as traces: all when there are at most `max_points`,
// else a sample drawn with `seed`; *legal_points gets how many the space has.
absl::StatusOr<std::vector<std::string>> SampleTraces(const SweepCase& c, int64_t max_points,
                                                      uint64_t seed, int64_t* legal_points);

// The base computation of `c`: its problem (given layouts, result_on_layer) on its mesh.
absl::StatusOr<ir::Computation> Base(const SweepCase& c);

// The same checks for one trace of the case's problem and mesh (legal_points counts 1
// when the trace is legal).
absl::StatusOr<SweepResult> CheckTrace(const SweepCase& c, const std::string& trace,
                                       const ProgramCheck& check = nullptr);

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_SPACE_SWEEP_H_
