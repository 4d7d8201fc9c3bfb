// The one place where ir/ calls isl's C API directly.
//
// isl's C++ bindings (isl/cpp.h) cover most of what meshtune needs; the few operations
// they lack (projecting out dimensions, naming dimensions, reading sample points) are
// wrapped here with isl::manage. IslContext owns an isl_ctx. isl objects must be used on
// one thread at a time together with their context; each Computation family has its own.
#ifndef MESHTUNE_IR_ISL_UTIL_H_
#define MESHTUNE_IR_ISL_UTIL_H_

#include <isl/cpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace meshtune::ir {

// Owns one isl_ctx, freed when the last shared owner goes away. isl errors become
// isl::exception (the C++ bindings' default) instead of messages on stderr.
class IslContext {
 public:
  IslContext();
  ~IslContext();
  IslContext(const IslContext&) = delete;
  IslContext& operator=(const IslContext&) = delete;
  isl::ctx ctx() const { return isl::ctx(ctx_); }

 private:
  isl_ctx* ctx_;
};

// Removes `n` output (range) dimensions starting at `first`, existentially quantified.
isl::map ProjectOutRange(const isl::map& m, unsigned first, unsigned n);
// Removes `n` input (domain) dimensions starting at `first`.
isl::map ProjectOutDomain(const isl::map& m, unsigned first, unsigned n);
// The product relation { d -> r : d in domain, r in range }.
isl::map MapFromDomainAndRange(const isl::set& domain, const isl::set& range);
// Affine functions built with isl's API rather than parsed from text (isl's parser
// dominates the cost of building maps with floor and mod terms).
// The function returning coordinate `pos` of points in `set_space`.
isl::aff DomainVar(const isl::space& set_space, unsigned pos);
// floor(a / d), for d >= 1.
isl::aff FloorDiv(const isl::aff& a, int64_t d);
// a mod m (non-negative), for m >= 1.
isl::aff Mod(const isl::aff& a, int64_t m);
isl::aff Sub(const isl::aff& a, const isl::aff& b);
isl::aff Add(const isl::aff& a, const isl::aff& b);
// constant + sum of coeff * x[pos] over `terms`, on `set_space`.
isl::aff Linear(const isl::space& set_space, const std::vector<std::pair<unsigned, int64_t>>& terms,
                int64_t constant);
// k * a.
isl::aff Scale(const isl::aff& a, int64_t k);
// The map { x -> Tuple[f_0(x), ..., f_k(x)] } on `set_space`.
isl::map MapFromAffs(const isl::space& set_space, const std::string& tuple,
                     const std::vector<isl::aff>& fs);
// The space of sets Tuple[x_0, ..., x_{n-1}].
isl::space SetSpace(isl::ctx ctx, const std::string& tuple, unsigned n);
// { x in space : 0 <= x_d < upper[d] } (no bound on dims whose upper is 0).
isl::set Box(const isl::space& set_space, const std::vector<int64_t>& upper);
// { a -> b : a[p] = b[q] for each (p, q) in pairs } from set spaces `a` and `b`.
isl::map Equalities(const isl::space& a, const isl::space& b,
                    const std::vector<std::pair<unsigned, unsigned>>& pairs);
// `m` shifted by `origin`: x -> y - origin(x) for every pair x -> y of `m` (same spaces).
isl::map MinusOrigin(const isl::map& m, const isl::pw_multi_aff& origin);
// Output dim `a` of `m` alone: X -> [m_a].
isl::map RangeComponent(const isl::map& m, unsigned a);
// True when `m` relates any two points of its domain that differ only in input dim `dim`
// to the same outputs (m need not be a function).
bool IndependentOfDim(const isl::map& m, unsigned dim);
// Output dim `pos` of `m` made free: projected out and put back unconstrained (what the
// other dims' constraints implied through it is kept).
isl::map FreeRangeDim(const isl::map& m, unsigned pos);
// Names the dimensions of a map's domain / range, or of a set, for printing.
isl::map NameDomainDims(const isl::map& m, const std::vector<std::string>& names);
isl::map NameRangeDims(const isl::map& m, const std::vector<std::string>& names);
isl::set NameSetDims(const isl::set& s, const std::vector<std::string>& names);
// Coordinates of some point of a non-empty set. CHECK-fails on an empty set.
std::vector<int64_t> SamplePoint(const isl::set& s);
// isl's own text for a map or set.
std::string ToString(const isl::map& m);
std::string ToString(const isl::set& s);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_ISL_UTIL_H_
