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
//
// The tolerance is an a-priori forward error bound (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., Lemma 3.1 and §3.1), per element, over the whole chain of a
// program. An element of a statement is c0 + sum over n terms t_r, c0 the output's filled
// value for `+=` (else nothing), t_r the product (or, for `sum`, the sum) of the k operand
// values a_j. Computed in precision u (2^-24 f32, 2^-53 f64) in any order — blocked, with
// FMA, partial sums on several ranks added in any tree — each of its values is perturbed
// by a factor (1 + theta), |theta| <= gamma_N = N u / (1 - N u), N the roundings on the
// longest path: k - 1 + n - 1 + [+=] for products, k n - 1 + [+=] for sums. An operand the
// oracle knows as v_j with bounds E_run_j (on a run's value, e_j) and E_ref_j (on v_j, f_j)
// lies within |a_j| <= A_j = |v_j| + f_j; a run's term errs by what its inputs carry,
// prod_j (A_j + e_j) - prod_j A_j (for two, |a| eb + |b| ea + ea eb), then rounds:
//   products: E_run = sum_r [prod (A_j + e_j) - prod A_j]
//                     + gamma_N(u) (sum_r prod (A_j + e_j) + |c0| + e_c0) + e_c0
//             E_ref = sum_r [prod (|v_j| + f_j) - prod |v_j|]
//                     + gamma_N(2^-53) (sum_r prod |v_j| + |c0|)
//   sums:     E_run = sum e_j + gamma_N(u) sum (A_j + e_j),  over every value summed
//             E_ref = sum f_j + gamma_N(2^-53) sum |v_j|
// (an element-wise add a + b: N = 1, E_run = ea + eb + gamma_1 (A_a + ea + A_b + eb)).
// A program input and c0 are the fill (E_ref = 0, E_run = its rounding to f32: 0, the fill
// has 24 bits); an intermediate is the value and bounds of the statement that wrote it
// (runtime/program_values.h), so the bound follows the program's chain. A held element is
// right when |got - v| <= 2 (E_run + E_ref) + 1e-30 (Expected::Tolerance: the factor 2
// over the first-order bound, the floor for elements whose terms are all zero).
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

// The arithmetic a run computes in, and its unit roundoff u: 2^-24 (f32), 2^-53 (f64).
enum class Precision { kF32, kF64 };
Precision PrecisionOf(int dtype_bytes);  // 8: f64, else f32
double UnitRoundoff(Precision precision);
// gamma_n = n u / (1 - n u) (Higham, Lemma 3.1); +inf when n u >= 1 (no bound holds).
double Gamma(int64_t n, double u);

// What the oracle knows of one element: its f64 reference value and two bounds on errors
// (the error bound of the header's comment above).
struct Expected {
  double value = 0;      // the reference, computed in f64
  double run_error = 0;  // E_run: |what a correct run holds - the exact value| <= run_error
  double ref_error = 0;  // E_ref: |value - the exact value| <= ref_error
  double magnitude = 0;  // the sum of its terms' magnitudes (and |c0|), as the f64 values
  // What an element may differ from `value` by: 2 (E_run + E_ref) + kToleranceFloor.
  double Tolerance() const;
};
// The safety factor over the bounds (their second-order terms, the f64 rounding of the
// bounds themselves) and the absolute floor (an element whose terms are all zero is exactly
// zero; 1e-30 is below any nonzero magnitude a product of a few of the fill's 24-bit values
// has, and above f32's gradual underflow).
inline constexpr double kToleranceSafety = 2;
inline constexpr double kToleranceFloor = 1e-30;

// A program input's element `linear` of `tensor` as a run of `precision` holds it: the fill
// value, E_run its rounding to f32 (0: the fill has 24 bits), E_ref 0.
Expected FilledValue(uint64_t seed, const std::string& tensor, int64_t linear, Precision precision);

// The value of element `linear` (row-major) of operand tensor `tensor`, with its bounds:
// what a Reference reads instead of the fill formula, for the statements of a program
// whose operands are earlier statements' results (runtime/program_values.h).
using OperandValues = std::function<Expected(const std::string& tensor, int64_t linear)>;

// The expected f64 values of `problem`'s output with its inputs filled from `seed` (or,
// when `values` is set, read from it; a `+=` output still starts from its filled values),
// with the error bounds of a run in `precision`.
class Reference {
 public:
  Reference(const ProblemSpec& problem, uint64_t seed, Precision precision,
            OperandValues values = nullptr);
  // Output element `g` (global index per dim): value and bounds.
  Expected At(const std::vector<int64_t>& g) const;
  // The terms summed per output element (the reduction's size).
  int64_t terms() const { return terms_; }
  // N of the bound: the roundings on an element's longest path of operations.
  int64_t roundings() const { return roundings_; }

 private:
  struct Operand {
    std::string tensor;
    std::vector<int> at;  // per dim, the position of its index in the point
    std::vector<int64_t> shape;
  };
  Expected ValueOf(const Operand& o, const std::vector<int64_t>& point,
                   std::vector<int64_t>* scratch) const;

  std::string output_;
  bool sum_, accumulate_;
  uint64_t seed_;
  Precision precision_;
  OperandValues values_;
  std::vector<int64_t> reduction_extents_;  // the indices the output does not carry
  std::vector<Operand> operands_;
  std::vector<int64_t> output_shape_;
  int64_t terms_ = 1;
  int64_t roundings_ = 0;
};

// What one rank holds of the output after a run: `slots` places, slot i holding the
// element of row-major global index global(i) (-1: none) with value value(i).
struct HeldOutput {
  int64_t slots = 0;
  std::function<int64_t(int64_t)> global;
  std::function<double(int64_t)> value;
};

// Checks the rank's held elements against the Reference of a run in `precision`: every
// one, or a deterministic sample when that would cost more than `limit` multiply-adds; an
// element is right when |got - value| <= Expected::Tolerance() (the bound). "" when right;
// else the first mismatch, "rank (x=0, y=1): C[0, 3] = 1.5 but the reference is 2" (`rank`
// is the text in the parentheses). `values` and `limit`: the operands' values and bounds
// (Reference) and the multiply-adds the check may spend, an element costing `cost` of them
// (default: the statement's terms).
std::string CheckHeldValues(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                            Precision precision, const std::string& rank,
                            const OperandValues& values = nullptr, int64_t limit = 4'000'000,
                            int64_t cost = 0);

// Collective over every rank of `comm`: every element of the output (`problem`'s) is held
// by at least one rank, and the copies of an element held by several agree: they differ by
// at most twice its Tolerance() (two copies each within the bound of the reference), which
// is computed (Reference over `seed`, `precision`, `values`) only for copies that differ by
// more than gamma_N (|high| + |low|) — copies that close are within it whenever they are
// right, so only elements near a cancellation pay for a reference. "" when so, on every
// rank; else, the same on every rank, "C[3, 0] is held by no rank", "C[1, 2] differs
// between its copies: 0.25 and 0.5" or "C[1, 2] is not a finite number on some rank".
// The elements are gathered in chunks of about a million, so memory stays bounded.
std::string CheckCoverage(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                          Precision precision, Comm& comm, const OperandValues& values = nullptr);

// The checks with a relative tolerance instead of the bound, as before it: an element
// within `tolerance` times its terms' magnitude of the reference (plus 1e-6), copies within
// `tolerance` (|high| + |low|) (plus 1e-6). For callers outside runtime/ that still pass one
// (tests/bound_run.cc); runtime's own checks use the bound.
std::string CheckHeldValues(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                            double tolerance, const std::string& rank);
std::string CheckCoverage(const ProblemSpec& problem, const HeldOutput& held, double tolerance,
                          Comm& comm);

// "x=0, y=1": the rank at `coords`, for messages.
std::string RankName(const std::vector<std::string>& axis_names, const Coords& coords);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_ORACLE_H_
