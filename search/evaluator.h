// Evaluator: legality, lowering and cost of the points of one Space (one mesh).
//
// Legality decomposes by tensor: a tensor's checks (ownership, single-source transfers,
// local access, complete output; ir/legality.h) depend only on the loops and on that
// tensor's own shard and communicate (ir::Computation::TensorKey). So for each loop nest and
// rotation the evaluator checks every tensor option once, keeps the legal ones, and a point
// of the space is legal exactly when each of its tensor options is (and, with a memory
// budget, their bytes add up within it). Counting the rejections of the whole space is then
// arithmetic over these tables rather than a replay per point.
//
//   Space (nests x rotations x options^tensors)
//      │  per (nest, rotation): replay the nest, then per tensor option Shard + Communicate
//      ▼  + CheckTensor  ───▶ NestTable: legal options per tensor, rejections by reason
//   Genome ──assemble (WithSharding/WithTransfer, no replay)──▶ Computation
//      ──ClosedFormLowering (codegen::Lower outside the forms)──▶ Program ──EstimateCost──▶
//      Candidate
//
// A Candidate's Program costs what the one ReplayTrace(ToTrace(genome)) lowers to does. One
// Evaluator per base Computation, on one thread (it holds isl objects of the base's context).
#ifndef MESHTUNE_SEARCH_EVALUATOR_H_
#define MESHTUNE_SEARCH_EVALUATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/computation.h"
#include "ir/legality.h"
#include "search/closed_form.h"
#include "search/cost_model.h"
#include "search/cost_params.h"
#include "search/space.h"

namespace meshtune::search {

// A costed, legal point of the space.
struct Candidate {
  int mesh = 0;  // which space it came from (the tuner's index; 0 for a single mesh)
  Genome genome;
  std::string trace;                  // canonical trace text
  CostReport cost;                    // the model's estimate
  std::vector<std::string> patterns;  // per transfer "A@ko Broadcast(axes=[1])"
  std::string program_key;            // equal for candidates that lower to the same Program
  int64_t order = 0;                  // evaluation order among the explorer's candidates
};

// Rejection counts by reason code.
using ReasonCounts = std::map<std::string, int64_t>;

// The legality table of one (nest, rotation): which tensor options are legal.
struct NestTable {
  bool usable = false;                  // the nest itself replayed
  std::vector<std::vector<int>> legal;  // per tensor, legal option indices (ascending)
  int64_t points = 0;                   // genomes of this (nest, rotation) in the space
  int64_t legal_points = 0;             // of which legal
  ReasonCounts pruned;                  // the others, by the first failing tensor's first reason
};

class Evaluator {
 public:
  // `space` must have been built from `base`.
  Evaluator(ir::Computation base, Space space, const CostParams& params);
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const ir::Computation& base() const { return base_; }

  const Space& space() const { return space_; }

  // The table of (nest, rotation), built on first use (thread-compatible, not thread-safe).
  const NestTable& Table(int nest, int rotation);

  // Whether `g` is legal according to the tables (and the memory budget).
  bool Legal(const Genome& g);

  // The dedup key of a costing Program `p` (lowered from `c` without offsets): its dump,
  // plus what the offsets it lacks are functions of — every tensor's layout and the loops
  // outside the kernel (strides, rotations) — so that schedules whose runnable programs
  // differ stay apart.
  static std::string ProgramKey(const codegen::Program& p, const ir::Computation& c);

  // The Computation of legal genome `g`: its nest, rotation, shardings and transfers (what
  // ReplayTrace(ToTrace(g)) gives, without a replay).
  ir::Computation Assemble(const Genome& g);

  // Lowers and costs `g`, which must be legal. The costing Program comes from the closed
  // forms (search/closed_form.h) or, outside them, from codegen::Lower without offsets: the
  // cost is the same either way. Unimplemented / Internal when lowering fails (the message
  // says why); ResourceExhausted when costing would take more than kMaxCostWork rank-steps
  // (EstimateCostWork; long loops whose sources change with every rank and step, on
  // thousands of ranks). Such points are not candidates (Explorer counts them unlowerable).
  absl::StatusOr<Candidate> Evaluate(const Genome& g);

  // Evaluations whose Program came from isl because the closed forms do not cover them.
  int64_t isl_lowerings() const { return isl_lowerings_; }

  // A genome with rotation 0 and the given nest/options is the same point as one with a
  // rotation of that nest's serial loop when no tensor is communicated at that loop, and as
  // one with a prefetched rotation when no tensor is communicated at a time loop (search/
  // space.h: Distinct); the space keeps only the plainer one. True when `g` is such a
  // redundant genome.
  bool RedundantRotation(const Genome& g) const;

 private:
  struct OptionState {
    bool legal = false;
    std::string reason;                         // first rejection code when not legal
    std::optional<ir::Sharding> sharding;       // the tensor's layout (none: replicated)
    std::optional<ir::Communication> transfer;  // its communicate (none: not communicated)
    int64_t bytes = 0;  // shard plus transfer buffer bytes (memory budget only)
  };
  struct NestState {
    NestTable table;
    bool built = false;
    std::vector<std::vector<OptionState>> options;  // per tensor, per option
    std::optional<ir::Computation> nest;            // loops (rotation applied), no tensors yet
  };
  // Per tensor of one (nest, rotation): its admissible options, those communicated at the
  // rotated loop, and of each the legal ones.
  struct OptionCounts {
    std::vector<int64_t> all, at, legal, legal_at;
  };
  NestState& State(int nest, int rotation);
  void Build(int nest, int rotation, NestState* state);
  // Option `opt` of tensor `t` on the nest's loops `c` (rotation `rot` applied): legal or
  // why not, its layout and transfer, and its bytes under a memory budget.
  OptionState CheckOption(const ir::Computation& c, size_t t, const TensorOption& opt,
                          const Rotation& rot);
  // Adds to state->table.pruned each rejected point, by its first failing tensor's reason.
  static void CountRejections(const NestChoices& choices, const Rotation& rot,
                              const OptionCounts& n, NestState* state);
  // How many legal points of (nest, rotation) exceed the memory budget.
  int64_t OverBudget(int nest, int rotation, const NestState& state) const;
  int64_t Bytes(const NestState& s, const Genome& g) const;
  // The nest's loop calls and kernel replayed on the base, or the reason they fail.
  const absl::StatusOr<ir::Computation>& NestComputation(int nest);
  // Shard(base, tensor, targets), memoized: shardings depend on the mesh alone.
  const absl::StatusOr<ir::Sharding>& ShardingOf(size_t tensor,
                                                 const std::vector<ir::ShardTarget>& targets);

  ir::Computation base_;
  Space space_;
  CostParams params_;
  ir::LegalityCache legality_{/*messages=*/false};
  codegen::LoweringCache lowering_;
  ClosedFormLowering closed_form_;
  int64_t isl_lowerings_ = 0;
  std::map<std::pair<int, int>, std::unique_ptr<NestState>> states_;
  std::map<int, absl::StatusOr<ir::Computation>> nest_computations_;
  std::map<std::string, absl::StatusOr<ir::Sharding>> shardings_;
};

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_EVALUATOR_H_
