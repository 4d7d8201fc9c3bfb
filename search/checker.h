// Checker: makes sure a schedule the tuner returns computes the right answer.
//
// Model-only tunes (and a measured tune whose measurements all failed) return the model's
// best. Before that answer is returned or stored, the checker validates its lowered
// Program (translation validation, codegen/validate/validate.h: an unsound Program is refused with
// its "lowering_unsound: ..." reason) and runs it on every rank of the mesh simulator
// (runtime/simulator.h) against the reference — at the real size when that is cheap,
// otherwise on a scaled-down instance with the same divisibility structure (each index's
// extent divided so that every divide, distribute, split and shard of the trace still
// applies, every loop of several iterations keeps several, and the program keeps its
// transfers and patterns). The simulator runs a thread a rank, so a mesh of more than
// SimulatingCheckerOptions::max_ranks ranks is first scaled down the same way: the trace
// is simulated on a mesh of the same axes, each axis size divided (an axis of several
// ranks keeps several), on which it lowers to the same transfers and patterns. The real
// Program is still lowered and validated at full size. Candidates about to be measured get
// the validation alone.
//
//   CheckResult::how   "simulated"         the real problem, every rank
//                      "simulated-scaled"  extents, and maybe the mesh, scaled down
//                                          (`scaled` says which)
// Thread-compatible.
#ifndef MESHTUNE_SEARCH_CHECKER_H_
#define MESHTUNE_SEARCH_CHECKER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/footprint.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"

namespace meshtune::search {

struct CheckResult {
  bool ok = false;
  std::string how;  // "simulated" or "simulated-scaled"
  // The instance simulated when scaled: its extents, e.g. "k=12,m=8,n=8", then " on " and
  // the mesh when that was scaled too ("k=16,m=64,n=64 on x=8,y=4,z=4").
  std::string scaled;
  std::string error;  // why it failed: the simulator's wrong element, or what could not be run
};

// A candidate ready to run: its translation-validated Program and per-rank footprint.
struct Runnable {
  codegen::Program program;
  ir::Footprint footprint;
};

// `trace` of `problem` on `mesh` through the pipeline (codegen/pipeline.h):
// its Program, or why it cannot run: ir::IllegalSchedule's InvalidArgument ("the schedule
// is illegal: [code] ...", its code for ir::AsRejection) when the verdict is illegal,
// else FailedPrecondition "lowering_unsound: ..." or "unvalidated: ...".
absl::StatusOr<Runnable> PrepareCandidate(const ir::Problem& problem, const ir::Mesh& mesh,
                                          const ir::Trace& trace);

class Checker {
 public:
  virtual ~Checker() = default;
  // Checks `trace` of `problem` on `mesh`.
  virtual CheckResult Check(const ir::Problem& problem, const ir::Mesh& mesh,
                            const ir::Trace& trace) = 0;
  // The static part alone, for candidates about to be measured: the Program the run
  // executes when translation validation (codegen/validate/validate.h) accepts it, else why
  // ("lowering_unsound: ..."). The default is PrepareCandidate.
  virtual absl::StatusOr<Runnable> Validate(const ir::Problem& problem, const ir::Mesh& mesh,
                                            const ir::Trace& trace);
};

struct SimulatingCheckerOptions {
  // A run is scaled down when the statement has more instances than `scale_above`, or the
  // oracle's coverage count (the output's elements times the ranks) is larger; where it
  // cannot be scaled (given layouts, extents without divisors), the real size is still
  // simulated up to `max_instances` of each. All ranks' shards and buffers together take
  // at most `max_bytes`.
  int64_t scale_above = int64_t{1} << 24;
  int64_t max_instances = int64_t{1} << 27;
  int64_t max_bytes = int64_t{512} << 20;
  // Meshes of more ranks than this are simulated scaled down (see the file comment).
  int64_t max_ranks = 64;
  uint64_t seed = 1;
};

// The simulator-backed checker described above.
std::unique_ptr<Checker> NewSimulatingChecker(const SimulatingCheckerOptions& options = {});

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_CHECKER_H_
