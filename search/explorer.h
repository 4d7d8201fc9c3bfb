// Explorer: the tuner's whole space — one Space and Evaluator per candidate mesh — as the
// legal points that search strategies walk, sample and mutate, with the counters the tuner
// reports (enumerated, legal, pruned by reason, costed, duplicates), and which of the costed
// candidates to measure (ToMeasure: by mesh and schedule family, FamilyOf).
//
// Evaluating a point lowers and costs it once; points that lower to a Program already
// costed count as duplicates and are not candidates again. Not thread-safe (isl contexts).
#ifndef MESHTUNE_SEARCH_EXPLORER_H_
#define MESHTUNE_SEARCH_EXPLORER_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "search/evaluator.h"
#include "search/space.h"

namespace meshtune::search {

// A point of the tuner's space: a mesh (index into Explorer's meshes) and a genome there.
struct Point {
  int mesh = 0;
  Genome genome;
};

struct SearchCounts {
  int64_t enumerated = 0;  // points of the space (all meshes), always exact
  int64_t legal = 0;       // of which legal (an estimate when `estimated`)
  ReasonCounts pruned;     // the others by reason code (estimates when `estimated`)
  // The space is judged lazily (Explorer): legal and pruned are extrapolated from the
  // options judged so far (Evaluator::Estimate), not counted.
  bool estimated = false;
  int64_t cells = 0;         // (mesh, nest, rotation) cells with points
  int64_t judged_cells = 0;  // of which some option has been judged
  int64_t evaluated = 0;     // legal points lowered and costed
  int64_t costed = 0;        // distinct Programs among them (the candidates)
  int64_t duplicates = 0;    // evaluated points whose Program was already costed
  int64_t unlowerable = 0;   // legal points the lowering refused or too costly to cost
  // Legal points not costed in full because a lower bound on their cost already exceeded
  // what they had to beat (BoundRule; Evaluator::Evaluate's cutoff).
  int64_t bounded = 0;
  // The work behind the verdicts and the costs: tensor checks decided by the closed forms
  // (ir/legality_closed_form.h) or by isl, and legal points lowered for costing by isl
  // (codegen::Lower) because the closed-form lowering (closed_form.h) declined them.
  int64_t closed_form_checks = 0;
  int64_t isl_checks = 0;
  int64_t isl_lowerings = 0;
};

// How the Explorer judges its space.
struct JudgeOptions {
  enum class Mode {
    kAuto,   // whole up to whole_points (below), else lazy
    kWhole,  // every tensor option of every cell judged by Create: exact counts
    kLazy,   // options judged as the search asks: counts estimated
  };
  Mode mode = Mode::kAuto;
  // kAuto: spaces of at most this many points are judged whole (about 2 s on one core for
  // 771,840 points of matmul on 8x8), larger ones lazily.
  int64_t whole_points = 2000000;
  // Lazily: the counts are estimated from this many random cells, each with this many
  // random options of each tensor judged (unbiased shares), and the cells judged whole.
  int sample_cells = 16;
  int sample_options = 4;
  uint64_t seed = 1;
};

// How near the top a candidate must be predicted for its family to be measured: within this
// factor of the best predicted time (see ChooseToMeasure).
inline constexpr double kFamilyWindow = 1.5;

// Which schedules the search need not cost in full. A schedule whose costing walk is long
// (Evaluator::Evaluate) is first bounded from below; it is counted `bounded` and not costed
// when the bound exceeds `window` times the best candidate's time so far and, with a
// `group` function, could not be its group's best within `group_window` of the best: the
// bound exceeds min(best time so far in its group, group_window times the best). A tune
// that measures uses kFamilyWindow (ChooseToMeasure measures the families within it); a
// model-only tune uses 1 (only the best is returned), with the schedule classes as groups,
// so that the best of every class within kFamilyWindow of the best is costed
// (search/schedule_class.h: BestPerClass).
struct BoundRule {
  double window = kFamilyWindow;
  double group_window = kFamilyWindow;
  // The group of (mesh index, nest index); empty: no groups. Called once per pair.
  std::function<std::string(int mesh, int nest)> group;
};

class Explorer {
 public:
  // Builds the space of `problem` on each of `meshes`, counts its points by arithmetic and
  // judges it whole or lazily as `judge` says (counts() is exact after a whole judgement,
  // an estimate otherwise). InvalidArgument when a mesh clashes with the problem's names or
  // the problem is beyond the space's limits. Cancelled as soon as `cancelled` (polled
  // between nests) returns true.
  static absl::StatusOr<std::unique_ptr<Explorer>> Create(
      const ir::Problem& problem, const std::vector<ir::Mesh>& meshes, const SpaceOptions& options,
      const cost::CostParams& params, const std::function<bool()>& cancelled = nullptr,
      const JudgeOptions& judge = {});

  int num_meshes() const { return static_cast<int>(evaluators_.size()); }
  const ir::Mesh& mesh(int i) const { return evaluators_[i]->base().mesh(); }
  Evaluator& evaluator(int i) { return *evaluators_[i]; }
  // Exact when judged whole; when lazy, legal and pruned are re-estimated at each call:
  // cells judged whole count exactly, the others at the sampled cells' shares
  // (Evaluator::Estimate).
  const SearchCounts& counts() const;
  // Whether the space is judged lazily.
  bool lazy() const { return lazy_; }

  // Calls `visit` on every legal point, mesh by mesh, nest by nest, in order (judging each
  // cell whole); stops when `visit` returns false.
  void ForEachLegal(const std::function<bool(const Point&)>& visit);

  // A random legal point: judged whole, drawn uniformly over (mesh, nest, rotation)
  // weighted by their legal points, then per tensor a legal option; lazily, a cell drawn
  // uniformly among those not known to be empty, then SampleCell. nullopt when none turned
  // up in a few tries.
  std::optional<Point> Sample(std::mt19937_64* rng);

  // Cells: the (mesh, nest, rotation) triples that hold legal points (judged whole) or
  // points not yet known to be illegal (lazily).
  int num_cells() const { return static_cast<int>(cells_.size()); }
  // A random legal point of cell `cell` (per tensor a random legal option, judged lazily);
  // nullopt when none turned up in a few tries (lazily, a cell found to hold no legal point
  // is not drawn again).
  std::optional<Point> SampleCell(int cell, std::mt19937_64* rng);
  // Cells that share a mesh and the same distributed loops (one survey group).
  std::string CellGroup(int cell) const;

  // A legal neighbour of `p`: one tensor's option (70%), the rotation (15%) or the nest
  // (15%; keeping the tensors' layouts and communicate loops where the new nest has them)
  // changed at random. Most steps stay in p's cell, where lowering reuses cached parts.
  // nullopt when no legal neighbour turned up in a few tries.
  std::optional<Point> Mutate(const Point& p, std::mt19937_64* rng);

  // Which schedules Evaluate need not cost in full (see BoundRule).
  void set_bound_rule(BoundRule rule) { bound_rule_ = std::move(rule); }

  // Lowers and costs `p` (which must be legal) once. Returns the new candidate, or nullptr
  // when `p` was evaluated before, lowers to an already costed Program, does not lower, or
  // is bounded out (costing it would be long, and a lower bound on its time exceeds what
  // the BoundRule says it must beat).
  const Candidate* Evaluate(const Point& p);
  bool Evaluated(const Point& p) const;

  // The costed candidates, in evaluation order (pointers to them stay valid).
  const std::deque<Candidate>& candidates() const { return candidates_; }
  // The `k` best by Better (ties: evaluation order).
  std::vector<const Candidate*> Best(size_t k) const;
  // What to measure: ChooseToMeasure over the costed candidates and this explorer's meshes.
  std::vector<const Candidate*> ToMeasure(size_t k) const;
  // Whether `a` ranks before `b`: less predicted time, then fewer transfers (a communicate
  // that moves nothing only costs a copy).
  static bool Better(const Candidate& a, const Candidate& b);

 private:
  Explorer() = default;
  static std::string Key(const Point& p);
  // Judges every cell whole; cells_ keeps those with legal points.
  absl::Status JudgeWhole(const std::function<bool()>& stop);
  // Judges a few options of each tensor in a sample of cells (lazily, for the estimate).
  void JudgeSample(const JudgeOptions& judge);
  // Lazily: recomputes counts_ from every cell's estimate.
  void Reestimate() const;
  // A legal option of tensor `t` in `q`'s cell: `keep` when legal, else a random one.
  std::optional<int> LegalOption(const Point& q, size_t t, int keep, std::mt19937_64* rng);

  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  mutable SearchCounts counts_;
  bool lazy_ = false;
  std::vector<bool> dead_;  // per cell: found to hold no legal point (lazily)
  // Lazily: the estimate's sample, per cell index: per tensor the options judged.
  std::map<size_t, std::vector<std::vector<int>>> sample_;
  // (mesh, nest, rotation) with legal points, and, judged whole, their legal point counts
  // (for Sample).
  std::vector<std::array<int, 3>> cells_;
  std::vector<int64_t> cell_weights_;
  std::set<std::string> seen_points_;
  std::unordered_map<std::string, size_t> programs_;  // program key -> candidates_ index
  std::deque<Candidate> candidates_;
  double best_seconds_ = std::numeric_limits<double>::infinity();
  BoundRule bound_rule_;
  std::map<std::pair<int, int>, std::string> groups_;  // (mesh, nest) -> bound_rule_.group
  std::map<std::string, double> group_best_;           // group -> best time costed in it
};

// The schedule family of `c`, whose mesh (Candidate::mesh) is `mesh`: the mesh and its
// communication structure — per tensor, in name order, the distinct patterns of its transfers
// and reductions in c.cost.transfers, each its kind and mesh axes by name (loops, broadcast
// roots and shift distances left out; Local ones, which send nothing, too), a prefetched one
// marked " prefetched", an input's copies (TENSOR@copies) as "copies". E.g. "x=2,y=2: A
// Shift(y); B Shift(x); C SendRecv", "x=4: A AllGather(x) prefetched", "x=2,y=2,z=2: A
// copies(y); B copies(x); C AllReduce(z)", "x=2: no communication". Candidates of one family move
// data the same way and differ in loops and block sizes, where the model's errors tend to be alike;
// those of different families may err differently, which only measurement shows.
std::string FamilyOf(const Candidate& c, const ir::Mesh& mesh);

// What to measure of `candidates` (any order; each one's mesh is meshes[c->mesh]): at most
// `k` of them, in the model's order (Explorer::Better, ties by Candidate::order). Chosen in
// three passes, each walking the candidates in the model's order:
//   1. with several meshes, each mesh's best, in up to half of the slots but at least 2
//      (the best meshes first), so that measurement can overrule the model across shapes;
//   2. the best of each family (FamilyOf) not yet chosen, among the candidates predicted
//      within kFamilyWindow times the best prediction, until the slots run out, so that
//      measurement can overrule a model that cannot tell near families apart;
//   3. the remaining slots in the model's order.
// A mesh's best is its family's best, so pass 2 skips the families pass 1 took.
// Deterministic: it depends only on the predictions, transfer counts, orders and families.
std::vector<const Candidate*> ChooseToMeasure(std::vector<const Candidate*> candidates,
                                              const std::vector<ir::Mesh>& meshes, size_t k);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_EXPLORER_H_
