// The oracle every run is checked against, written independently of what runs.
//
// What the output should hold comes from the problem as the user stated it (ProblemSpec:
// the statement and its extents, never a lowered Program's kernel call, shards or layouts)
// and the global fill formula of runtime/fill.h: an input element's value is a hash of
// (seed, tensor, global index), so the expected value of any output element is computed
// on its own, without communication. Two checks use it:
//   - CheckHeldValues: one rank's output elements against the expected values;
//   - CheckCoverage: collective, gathers which output elements the ranks actually hold and
//     fails on an element no rank holds or whose copies disagree.
// A lowering that computes the right values in the wrong place on every side (fills,
// kernels and the claimed shard alike) passes the first and fails the second.
// Pure functions over their arguments; thread-safe but for the Comm a check runs on.
#ifndef MESHTUNE_RUNTIME_ORACLE_H_
#define MESHTUNE_RUNTIME_ORACLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/comm.h"

namespace meshtune::runtime {

// The statement and extents of a problem (ir::Problem, in plain values the runtime and
// emitted programs can hold): `C[m,n] += A[m,k] * B[k,n]` with m, n, k.
struct ProblemSpec {
  struct Access {
    std::string tensor;
    std::vector<std::string> indices;
  };
  Access output;
  std::vector<Access> operands;
  bool sum = false;         // operands added (else multiplied)
  bool accumulate = false;  // '+=': the output starts from its own filled values
  std::map<std::string, int64_t> extents;

  // The extents of `tensor`'s dims (its first access); empty for an unknown tensor.
  std::vector<int64_t> Shape(const std::string& tensor) const;
};

// The value of element `linear` (row-major) of operand tensor `tensor`: what a Reference
// reads instead of the fill formula, for the statements of a program whose operands are
// earlier statements' results (runtime/program_values.h).
using OperandValues = std::function<double(const std::string& tensor, int64_t linear)>;

// The expected f64 values of `problem`'s output with its inputs filled from `seed` (or,
// when `values` is set, read from it; a `+=` output still starts from its filled values).
class Reference {
 public:
  Reference(const ProblemSpec& problem, uint64_t seed, OperandValues values = nullptr);
  // The value of output element `g` (global index per dim); *magnitude gets the sum of its
  // terms' magnitudes (what a tolerance scales by).
  double At(const std::vector<int64_t>& g, double* magnitude) const;
  // The terms summed per output element (the reduction's size).
  int64_t terms() const { return terms_; }

 private:
  struct Operand {
    std::string tensor;
    std::vector<int> at;  // per dim, the position of its index in the point
    std::vector<int64_t> shape;
  };
  std::string output_;
  bool sum_, accumulate_;
  uint64_t seed_;
  OperandValues values_;
  std::vector<int64_t> reduction_extents_;  // the indices the output does not carry
  std::vector<Operand> operands_;
  std::vector<int64_t> output_shape_;
  int64_t terms_ = 1;
};

// What one rank holds of the output after a run: `slots` places, slot i holding the
// element of row-major global index global(i) (-1: none) with value value(i).
struct HeldOutput {
  int64_t slots = 0;
  std::function<int64_t(int64_t)> global;
  std::function<double(int64_t)> value;
};

// Checks the rank's held elements against the Reference: every one, or a deterministic
// sample when that would cost more than 4e6 multiply-adds; an element is right when it is
// within `tolerance` times its terms' magnitude (plus 1e-6). "" when right; else the first
// mismatch, "rank (x=0, y=1): C[0, 3] = 1.5 but the reference is 2" (`rank` is the text
// in the parentheses). `values` and `limit`: the operands' values (Reference) and the
// multiply-adds the check may spend, an element costing `cost` of them (default: the
// statement's terms).
std::string CheckHeldValues(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                            double tolerance, const std::string& rank,
                            const OperandValues& values = nullptr, int64_t limit = 4'000'000,
                            int64_t cost = 0);

// Collective over every rank of `comm`: every element of the output (`problem`'s) is held
// by at least one rank, and the copies of an element held by several agree within
// `tolerance` (relative). "" when so, on every rank; else, the same on every rank,
// "C[3, 0] is held by no rank", "C[1, 2] differs between its copies: 0.25 and 0.5" or
// "C[1, 2] is not a finite number on some rank".
// The elements are gathered in chunks of about a million, so memory stays bounded.
std::string CheckCoverage(const ProblemSpec& problem, const HeldOutput& held, double tolerance,
                          Comm& comm);

// "x=0, y=1": the rank at `coords`, for messages.
std::string RankName(const std::vector<std::string>& axis_names, const Coords& coords);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_ORACLE_H_
