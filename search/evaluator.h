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
//      ──ClosedFormLowering (codegen::Lower outside the forms)──▶ Program ──cost::EstimateCost──▶
//      Candidate
//
// Tables are built whole (Table: every option judged, counts exact) or judged option by
// option as a search asks (OptionLegal, SampleOption: a large space is never judged whole;
// Estimate then extrapolates a cell's counts from the options judged so far). Points(n, r)
// counts a cell's genomes by arithmetic, without isl.
//
// A Candidate's Program costs what the one ReplayTrace(ToTrace(genome)) lowers to does. One
// Evaluator per base Computation, on one thread (it holds isl objects of the base's context).
#ifndef MESHTUNE_SEARCH_EVALUATOR_H_
#define MESHTUNE_SEARCH_EVALUATOR_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/lower.h"
#include "codegen/program.h"
#include "cost/cost_model.h"
#include "cost/cost_params.h"
#include "ir/computation.h"
#include "ir/legality.h"
#include "ir/trace.h"
#include "search/closed_form.h"
#include "search/space.h"

namespace meshtune::search {

// A costed, legal point of the space.
struct Candidate {
  int mesh = 0;  // which space it came from (the tuner's index; 0 for a single mesh)
  Genome genome;
  ir::Trace schedule;                 // the trace, as the space builds it from the genome
  std::string trace;                  // its canonical text (what results and records carry)
  cost::CostReport cost;              // the model's estimate
  std::vector<std::string> patterns;  // per transfer "A@ko Broadcast(axes=[1])"
  std::string program_key;            // equal for candidates that lower to the same Program
  int64_t order = 0;                  // evaluation order among the explorer's candidates
};

// Rejection counts by reason code.
using ReasonCounts = std::map<std::string, int64_t>;

// What is known of one (nest, rotation) cell's legal points: exact when every option of
// every tensor has been judged (and, under a memory budget, the table built whole), else
// extrapolated per tensor from the share of its judged options that are legal (the memory
// budget is not applied to estimates).
struct CellEstimate {
  int64_t points = 0;                    // genomes of the cell (exact, by arithmetic)
  double legal = 0;                      // legal points
  std::map<std::string, double> pruned;  // the others by reason (see NestTable::pruned)
  bool exact = false;
  bool touched = false;  // any option judged (or the nest found not to replay)
  // Legal points known for certain: those made of options judged legal (0 under a memory
  // budget, which the options alone do not settle). At most `legal` when exact.
  double known = 0;
};

// The legality table of one (nest, rotation): which tensor options are legal.
struct NestTable {
  bool usable = false;                  // the nest itself replayed
  std::vector<std::vector<int>> legal;  // per tensor, legal option indices (ascending)
  int64_t points = 0;                   // genomes of this (nest, rotation) in the space
  int64_t legal_points = 0;             // of which legal
  ReasonCounts pruned;                  // the others, by the first failing tensor's first reason
};

// Costing walks of more rank-steps than this (and at most cost::kMaxCostWork) are bounded first
// when the search gives a cutoff (Evaluator::Evaluate): on one rank class, then 8, then at
// most kBoundRanks, each bound only when its walk is at most a quarter of the full one.
inline constexpr int64_t kBoundWork = int64_t{1} << 16;
inline constexpr int64_t kBoundRanks = 64;

class Evaluator {
 public:
  // `space` must have been built from `base`. With `closed_form_legality` (the default)
  // tensor options in the closed forms are judged by arithmetic (ir/legality_closed_form.h),
  // the others by isl; without it every option by isl. The verdicts are the same.
  Evaluator(ir::Computation base, Space space, const cost::CostParams& params,
            bool closed_form_legality = true);
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const ir::Computation& base() const { return base_; }

  const Space& space() const { return space_; }

  // The table of (nest, rotation), built whole on first use: every tensor option judged
  // (thread-compatible, not thread-safe).
  const NestTable& Table(int nest, int rotation);

  // The genomes of (nest, rotation), by arithmetic over admissible options (no isl).
  int64_t Points(int nest, int rotation) const;

  // Whether option `o` of tensor `t` is legal in (nest, rotation) — judged on first use,
  // without building the rest of the table. False when the nest does not replay.
  bool OptionLegal(int nest, int rotation, size_t t, int o);

  // A random legal option of tensor `t` in (nest, rotation), judging admissible options in
  // random order until one is legal (only options Distinct under the rotation when
  // `distinct`); nullopt when none is.
  std::optional<int> SampleOption(int nest, int rotation, size_t t, bool distinct,
                                  std::mt19937_64* rng);

  // What the options judged so far say of (nest, rotation) (see CellEstimate): exact when
  // all are judged; else, with `sample` (per tensor, options judged at random, independent
  // of their verdicts), extrapolated from the sample's legal shares. Options judged by a
  // search that stops at the first legal one would bias the shares, so without a sample
  // an incompletely judged cell is `touched` with no estimate (legal 0, exact false).
  CellEstimate Estimate(int nest, int rotation,
                        const std::vector<std::vector<int>>* sample = nullptr) const;

  // Why option `o` of tensor `t` is illegal in (nest, rotation): the first rejection's code
  // (the nest's own when it does not replay; "inadmissible" when `o` is not a point of the
  // cell), or "" when it is legal. Judged on first use.
  std::string OptionReason(int nest, int rotation, size_t t, int o);

  // The per-tensor legality checks made so far: their counts, by the closed forms and isl.
  const ir::LegalityCache& legality() const { return legality_; }

  // Whether `g` is legal (and within the memory budget), judging its options on first use.
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
  // says why); ResourceExhausted when costing would take more than cost::kMaxCostWork rank-steps
  // (cost::EstimateCostWork; long loops whose sources change with every rank and step, on
  // thousands of ranks). Such points are not candidates (Explorer counts them unlowerable).
  // With a finite `cutoff` (seconds), a schedule whose costing takes more than kBoundWork
  // rank-steps is first bounded from below (cost::EstimateCostLowerBound over 1, 8 and kBoundRanks
  // rank classes); OutOfRange when a bound exceeds the cutoff (it could not be chosen).
  // With `known`, a Program whose ProgramKey it accepts is not costed: AlreadyExists.
  absl::StatusOr<Candidate> Evaluate(
      const Genome& g, double cutoff = std::numeric_limits<double>::infinity(),
      const std::function<bool(const std::string&)>& known = nullptr);

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
  // Per tensor of one (nest, rotation): its admissible options, those Distinct under the
  // rotation, and of each the legal ones (among those judged).
  struct OptionCounts {
    std::vector<int64_t> all, at, legal, legal_at;
  };
  struct NestState {
    NestTable table;
    bool built = false;   // every option judged, table complete
    bool usable = false;  // the nest replayed (else every point is pruned for its reason)
    std::string nest_reason;
    std::vector<std::vector<OptionState>> options;  // per tensor, per option
    std::vector<std::vector<bool>> judged;          // per tensor, per option
    OptionCounts counts;                            // all/at exact; legal among judged
    std::vector<int64_t> judged_count;              // per tensor: admissible options judged
    std::optional<ir::Computation> nest;            // loops (rotation applied), no tensors yet
  };
  // Per tensor of (nest, rotation) its admissible options (all) and those Distinct under
  // the rotation (at).
  void CountAdmissible(int nest, int rotation, std::vector<int64_t>* all,
                       std::vector<int64_t>* at) const;
  // The cell's state, its nest replayed and admissible options counted (nothing judged).
  NestState& Prepared(int nest, int rotation);
  NestState& State(int nest, int rotation);
  void Build(int nest, int rotation, NestState* state);
  // Judges option `o` of tensor `t` of a prepared, usable cell once.
  const OptionState& Judge(int nest, int rotation, NestState* state, size_t t, int o);
  // Option `opt` of tensor `t` on the nest's loops `c` (rotation `rot` applied): legal or
  // why not, its layout and transfer, and its bytes under a memory budget.
  OptionState CheckOption(const ir::Computation& c, size_t t, const TensorOption& opt,
                          const Rotation& rot);
  // Rejected points by the first failing tensor's reason: an option of tensor t that
  // `taken` marks and `state` judged illegal stands for the points whose tensors before t
  // are legal (legal[j], legal_at[j] of them) and after t anything, times weight[t] (the
  // share of t's options it stands for: 1 when all are taken).
  static std::map<std::string, double> CountRejections(const NestChoices& choices,
                                                       const Rotation& rot, const NestState& state,
                                                       const std::vector<std::vector<bool>>& taken,
                                                       const std::vector<double>& legal,
                                                       const std::vector<double>& legal_at,
                                                       const std::vector<double>& weight);
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
  cost::CostParams params_;
  ir::LegalityCache legality_;
  codegen::LoweringCache lowering_;
  ClosedFormLowering closed_form_;
  int64_t isl_lowerings_ = 0;
  std::map<std::pair<int, int>, std::unique_ptr<NestState>> states_;
  std::map<int, absl::StatusOr<ir::Computation>> nest_computations_;
  std::map<std::string, absl::StatusOr<ir::Sharding>> shardings_;
};

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_EVALUATOR_H_
