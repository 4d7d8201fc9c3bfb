// What a tune of a program of several statements chooses among: a schedule per statement
// on one mesh, and the moves of the tensors one statement leaves for another
// (search/program_search.h makes them; search::Tune answers with them).
#ifndef MESHTUNE_SEARCH_PROGRAM_CANDIDATE_H_
#define MESHTUNE_SEARCH_PROGRAM_CANDIDATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "search/explorer.h"
#include "search/runner.h"

namespace meshtune::search {

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

// The answer of a tune of a program of several statements (SearchResult::program).
struct ProgramAnswer {
  ProgramCandidate best;
  // The joint search's best programs, best first (best among them unless measured).
  std::vector<ProgramCandidate> ranked;
  // Each statement's own best schedule on a mesh, then the moves its layouts need: what
  // tuning the statements one by one gives (the best such over the meshes).
  ProgramCandidate separate;
  std::vector<MeasuredProgram> measurements;  // in the order taken
  int best_measurement = -1;                  // the winner's index there; -1: not measured
  std::vector<SearchCounts> counts;           // per statement
  std::vector<std::string> strategies;        // per statement
};

// The layout key of `tensor` as candidate `c` of `problem` shards it: per dim of its
// access, the axis expressions its shard call splits the dim over ("*": whole), joined
// by ','. Two schedules on one mesh whose keys agree hold the tensor in the same boxes.
std::string LayoutKey(const Candidate& c, const ir::Problem& problem, const std::string& tensor);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_PROGRAM_CANDIDATE_H_
