// Schedule classes: which textbook family of parallel algorithms a schedule belongs to, read
// off how its loop nest distributes the problem's indices over the mesh axes.
//
// An index is distributed over mesh axis a when a distribute call of the trace (directly, or
// through a loop split or divided from it) assigns it to a; axes of size 1 distribute nothing
// and are not counted. Reduction indices are the indices the output does not carry (k in
// C[m,n] += A[m,k] * B[k,n]). With O the axes that carry output indices and R those that
// carry reduction indices, the class is:
//
//   "1D"       no reduction index distributed and |O| < 2: the output split along one axis
//              (a 1-axis mesh; also a single rank, where nothing is distributed);
//   "2D"       no reduction index distributed and |O| >= 2: output-stationary (SUMMA,
//              Cannon, PUMMA);
//   "3D"       a reduction index distributed, |O| >= 2, and the product of the sizes of R at
//              least the smallest size in O (x=4,y=4,z=4; x=4,y=2,z=2 with k on z);
//   "2.5D"     a reduction index distributed, |O| >= 2, and the product of the sizes of R
//              below the smallest size in O (x=4,y=4,z=2 with k on z);
//   "split-k"  a reduction index distributed and |O| < 2 (x=8 with k on x; x=4,y=2 with m
//              and k): each rank sums part of the reduction and the partial outputs are
//              reduced.
//
// The class depends only on the loop nest and the mesh: tensor layouts, communication and
// rotations do not change it (Cannon and SUMMA are both "2D"). The tuner's space assigns one
// distinct index to every axis, so on a 3-axis mesh every matmul schedule is "2.5D" or "3D",
// and on an uneven one both: on x=8,y=8,z=4, k on z is "2.5D", k on x (m on y, n on z)
// "3D". "1D" is kept apart from "2D" because a 1-axis distribution of the output (block
// rows, an all-gather of B) is its own textbook family, with its own communication volume.
#ifndef MESHTUNE_SEARCH_SCHEDULE_CLASS_H_
#define MESHTUNE_SEARCH_SCHEDULE_CLASS_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "search/evaluator.h"
#include "search/explorer.h"
#include "search/space.h"

namespace meshtune::search {

// Every class ScheduleClass returns, in the order reports list them.
inline constexpr std::array<const char*, 5> kScheduleClasses = {"1D", "2D", "2.5D", "3D",
                                                                "split-k"};

// The class of a schedule whose loop calls (split, divide, distribute; others are ignored)
// are `calls`, for `problem` on `mesh`. InvalidArgument when a call names a loop that is
// neither an index of `problem` nor made by an earlier call, or a distribute names an axis
// that `mesh` lacks.
absl::StatusOr<std::string> ScheduleClassOfCalls(const std::vector<ir::Instruction>& calls,
                                                 const ir::Problem& problem, const ir::Mesh& mesh);

// The class of trace `trace` (any trace, legal or not) for `problem` on `mesh`; errors as
// ScheduleClassOfCalls.
absl::StatusOr<std::string> ScheduleClassOfTrace(const ir::Trace& trace, const ir::Problem& problem,
                                                 const ir::Mesh& mesh);

// The class of candidate `c` of `space`, the space of `problem` on `mesh` (c's own mesh),
// from its genome's loop nest (space.nests()[c.genome.nest]): the class of c.trace. A
// candidate whose nest is not in `space` is a bug (CHECK).
std::string ScheduleClass(const Candidate& c, const Space& space, const ir::Problem& problem,
                          const ir::Mesh& mesh);

// The best candidate of one class.
struct ClassBest {
  std::string schedule_class;  // one of kScheduleClasses
  Candidate best;              // by Explorer::Better
  std::string mesh;            // best's mesh, "x=4,y=4,z=2"
  // best.cost.comm_words_per_rank over CommLowerBound (search/lower_bound.h) for the
  // mesh's rank count; empty when the problem is not of matmul form.
  std::optional<double> lower_bound_ratio;
};

// Per class, the best of the candidates `explorer` has costed (all its meshes, by
// Explorer::Better, ties to the earlier evaluated), in kScheduleClasses order; classes
// without a costed candidate are left out. `problem` is the problem the explorer was built
// for.
std::vector<ClassBest> BestPerClass(Explorer& explorer, const ir::Problem& problem);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_SCHEDULE_CLASS_H_
