// Internal to the cost model (cost/cost_model.cc): the costed ranks and the values an
// expression takes on each of them (RankValues). The costed ranks are rank classes, one
// for every rank alike along the mesh axes the cost does not depend on (CostAxes).
#ifndef MESHTUNE_COST_COST_VALUES_H_
#define MESHTUNE_COST_COST_VALUES_H_

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "codegen/expr.h"
#include "codegen/program.h"

namespace meshtune::cost::internal {

using Values = std::vector<int64_t>;  // one value per rank, by row-major rank id

// Variables bound to one value per costed rank: the mesh coordinates, then the enclosing
// loops. The costed ranks are those at coordinate 0 along the axes CostAxes leaves out,
// numbered row-major over the others.
class RankValues {
 public:
  // With `max_ranks` > 0 and more classes than that, only `max_ranks` of them are costed,
  // evenly spaced over the class ids (the first among them): a subset, for lower bounds.
  RankValues(const codegen::Program& p, bool classes, int64_t max_ranks = 0);

  int64_t ranks() const { return ranks_; }
  // Whether only a subset of the classes is costed (see the constructor).
  bool subset() const { return subset_; }
  // The class id (row-major over the class grid, as RankIds gives) of costed rank `r`.
  int64_t Self(int64_t r) const { return self_[r]; }

  // The costed rank standing for mesh rank `id` (row-major over `all_sizes`).
  int64_t ClassOf(int64_t id, const std::vector<int64_t>& all_sizes) const;
  // The lowest mesh rank that costed rank `r` stands for.
  int64_t MeshRank(int64_t r, const std::vector<int64_t>& all_sizes) const;

  // Binds `name` to `values` until the matching Pop; returns its slot for Set.
  size_t Push(const std::string& name, Values values) {
    vars_.emplace_back(name, std::move(values));
    return vars_.size() - 1;
  }
  Values& Slot(size_t slot) { return vars_[slot].second; }
  void Pop() { vars_.pop_back(); }

  // The innermost binding of `name`, or null.
  const Values* Find(const std::string& name) const {
    for (size_t i = vars_.size(); i-- > 0;) {
      if (vars_[i].first == name) return &vars_[i].second;
    }
    return nullptr;
  }

  // `e` on every rank; unbound variables are 0, as in the executor.
  void Eval(const codegen::Expr& e, Values* out) { EvalAt(e, out, 0); }

  // Each rank's row-major id of the coordinates `coords` (one per axis) among the costed
  // ranks; -1 off the mesh.
  void RankIds(const std::vector<codegen::Expr>& coords, Values* out);

 private:
  // Eval with scratch vectors per recursion depth (no allocation once they have grown).
  void EvalAt(const codegen::Expr& e, Values* out, size_t depth);

  std::vector<bool> relevant_;
  std::vector<int64_t> sizes_;  // per axis: its size, or 1 when left out
  int64_t ranks_ = 1;
  bool subset_ = false;
  Values self_;  // per costed rank, its class id
  std::vector<std::pair<std::string, Values>> vars_;
  Values coord_;                               // RankIds' scratch
  std::deque<std::array<Values, 3>> scratch_;  // a deque: deeper levels keep references valid
};

}  // namespace meshtune::cost::internal

#endif  // MESHTUNE_COST_COST_VALUES_H_
