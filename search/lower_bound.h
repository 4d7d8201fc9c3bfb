// Lower bounds on the communication of a statement run in parallel: of matrix
// multiplication, tight, and of any einsum (CommLowerBound, below).
//
// For a problem of matmul form, the memory-independent bound of
//   H. Al Daas, G. Ballard, L. Grigori, S. Kumar, K. Rouse, "Tight Memory-Independent
//   Parallel Matrix Multiplication Communication Lower Bounds", SPAA 2022
//   (arXiv:2205.13407), Theorem 3 / Corollary 4:
// with d1 >= d2 >= d3 the sorted dimensions and P ranks, some rank must access
//   D = (d1 d2 + d1 d3)/P + d2 d3             when P <= d1/d2               (1D)
//   D = 2 sqrt(d1 d2 d3^2 / P) + d1 d2 / P    when d1/d2 <= P <= d1 d2/d3^2 (2D)
//   D = 3 (d1 d2 d3 / P)^(2/3)                otherwise                     (3D)
// words, of which it may own its share (d1 d2 + d1 d3 + d2 d3)/P at the start, so it must
// communicate W = D - (d1 d2 + d1 d3 + d2 d3)/P words. The model assumes every input and
// output element is held by exactly one rank before and after (no replication) and an
// even load; schedules that start from replicated inputs can communicate less.
#ifndef MESHTUNE_SEARCH_LOWER_BOUND_H_
#define MESHTUNE_SEARCH_LOWER_BOUND_H_

#include <cstdint>
#include <optional>

#include "ir/problem.h"

namespace meshtune::search {

// Words (elements) some rank must communicate to compute `p` on `ranks` ranks, by the bound
// above. `p` is of matmul form when it is a product of two operands, its three tensors are
// distinct, and every index appears in exactly two of the three accesses: M = indices of
// the output and the first operand, N = of the output and the second, K = of the two
// operands; m, n, k are the products of their extents (1 for an empty set, so a
// matrix-vector product is matmul form with n = 1). nullopt for other problems and for
// ranks <= 1.
std::optional<double> MatmulCommLowerBound(const ir::Problem& p, int64_t ranks);

// Words some rank must communicate to compute any statement `p` on `ranks` ranks (an einsum
// of 1 to 3 operands, a product or a sum), by the Hoelder-Brascamp-Lieb inequality for
// coordinate projections:
//   M. Christ, J. Demmel, N. Knight, T. Scanlon, K. Yelick, "Communication Lower Bounds and
//   Optimal Algorithms for Programs That Reference Arrays -- Part 1", UCB/EECS-2013-61,
//   Theorem 3.2 with the constraints of its Section 6.3 (projections onto coordinates):
// for iterations V and exponents s_j >= 0 with sum of s_j over the tensors j that an index
// appears in >= 1 for every index, |V| <= prod_j |phi_j(V)|^(s_j), phi_j(V) the elements of
// tensor j that V touches. Some rank runs T = (the product of the extents) / ranks
// iterations; it touches at least d_j elements of tensor j, at most its size c_j and at
// least T over the iterations one element of it takes part in, with prod_j d_j^(s_j) >= T.
// The bound is the least sum of d_j under those constraints (its optimum clamps
// d_j = mu s_j to [lo_j, c_j]), the largest over the vertices s of the constraints' polytope,
// less the rank's even share of every tensor, (sum of c_j) / ranks, as in the matmul bound
// above (memory-independent: Ballard, Demmel, Holtz, Lipshitz, Schwartz, SPAA 2012). For a
// statement of matmul form it is the larger of this and MatmulCommLowerBound, which is tight.
// nullopt for ranks <= 1 and for a statement that names one tensor twice.
std::optional<double> CommLowerBound(const ir::Problem& p, int64_t ranks);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_LOWER_BOUND_H_
