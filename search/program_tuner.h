// The program tuner: from a program of statements (ir::StatementProgram) and meshes to the
// fastest verified set of schedules, one per statement, with the layouts between them
// chosen together.
//
//   per statement: Explorer + default strategy ──▶ costed candidates (its own space)
//        │  each candidate keyed by the layouts of its intermediates (LayoutKey: per dim
//        ▼  the mesh axes its shard splits the dim over) — what it reads and what it leaves
//   Pareto sets: per statement and mesh, the best schedules per key of its intermediates
//        │
//        ▼  dynamic programming in statement order, the state the layouts of the
//   joint:  intermediates still to be read, each step adding a statement's schedule and the
//        │  moves of what it reads (runtime::PlanRedistribution, costed per rank by
//        │  cost::MoveSeconds; nothing when the consumer's shards are the producer's) — exact
//        ▼  along chains and over small DAGs, the k best per state
//   ranked programs + "separate" (each statement's own best on the mesh, then the moves)
//        │
//        ▼  Runner::RunProgram (one MPI job a program: every statement, every move, checked
//   winner: the fastest verified; unmeasured, the model's best checked in the simulator
//
// Not thread-safe (isl contexts); runs on the calling thread.
#ifndef MESHTUNE_SEARCH_PROGRAM_TUNER_H_
#define MESHTUNE_SEARCH_PROGRAM_TUNER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "ir/mesh.h"
#include "ir/statement_program.h"
#include "search/checker.h"
#include "search/decision.h"
#include "search/explorer.h"
#include "search/runner.h"
#include "search/strategy.h"
#include "search/tuner.h"

namespace meshtune::search {

struct ProgramTuneOptions {
  ir::StatementProgram program;
  // The search's settings as a statement's tune takes them (search.problem is not read:
  // each statement is its own): the meshes (every statement runs on the same one of
  // them), space, machine numbers, judging and strategy settings per statement; top_k
  // programs measured (0: none), "separate" besides; budget_s for the whole tune, the
  // statements' searches getting half; cancelled; the checker (nullptr: simulating).
  TuneOptions search;
  // A program whose statements together have at most this many instances is simulated
  // whole (every statement and move) before a model-only answer is returned; larger ones
  // have each statement checked alone.
  int64_t simulate_below = int64_t{1} << 22;
  // Called after each statement's search ("search", its counts, `statement` N of n), before
  // and after each measured program ("measure", measured k of K) and at the end ("done");
  // may be empty.
  std::function<void(const SearchProgress&)> progress;
};

// An intermediate between two statements of a program.
struct Move {
  std::string tensor;
  int producer = 0, consumer = 0;  // statement indices
  // The consumer's shards are the producer's on every rank: read in place, nothing moves.
  bool in_place = false;
  int64_t bytes_max = 0;  // sent by the busiest rank
  double seconds = 0;     // predicted (cost::MoveSeconds of the busiest rank)
};

// A schedule of a program: one candidate per statement, all on mesh `mesh`.
struct ProgramCandidate {
  int mesh = 0;
  std::vector<Candidate> statements;
  std::vector<Move> moves;  // by consumer, then by tensor
  double seconds = 0;       // predicted: the statements' plus the moves'
};

struct MeasuredProgram {
  ProgramCandidate candidate;
  std::string label;  // "joint 1", "joint 2", ..., "separate"
  CandidateRun run;
  // Refused by the physics guard: "implausible_time: ..." (search/plausibility.h).
  std::optional<std::string> implausible;
};

struct ProgramTuneResult {
  ProgramCandidate best;
  ir::Mesh mesh;
  std::optional<double> measured_s;
  bool verified = false;
  // "measured" (under MPI), "simulated" (the whole program in the simulator) or
  // "statements checked" (each statement by the checker: search/checker.h).
  std::string checked;
  // The joint search's best programs, best first (best among them unless measured).
  std::vector<ProgramCandidate> ranked;
  // Each statement's own best schedule on a mesh, then the moves its layouts need: what
  // tuning the statements one by one gives (the best such over the meshes).
  ProgramCandidate separate;
  std::vector<MeasuredProgram> measurements;  // in the order taken
  int best_measurement = -1;                  // the winner's index there; -1: not measured
  // How the winner was chosen (search/decision.h): the fastest measured program against the
  // second (indices into measurements), and "separated", "tie within noise" or "".
  std::optional<Compared> leader;
  std::string verdict;
  std::vector<SearchCounts> counts;     // per statement
  std::vector<std::string> strategies;  // per statement
  std::vector<std::string> refused;     // programs a check refused, with why
  double seconds = 0;
};

// The layout key of `tensor` as candidate `c` of `problem` shards it: per dim of its
// access, the axis expressions its shard call splits the dim over ("*": whole), joined
// by ','. Two schedules on one mesh whose keys agree hold the tensor in the same boxes.
std::string LayoutKey(const Candidate& c, const ir::Problem& problem, const std::string& tensor);

// Tunes `options.program`. InvalidArgument for bad options; FailedPrecondition when a
// statement has no legal schedule (its message prefixed with "statement N: "), when no
// mesh holds a schedule of every statement, or when no program measured or passed the
// checks; Cancelled when cancelled before a result.
absl::StatusOr<ProgramTuneResult> TuneProgram(const ProgramTuneOptions& options, Runner& runner);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_PROGRAM_TUNER_H_
