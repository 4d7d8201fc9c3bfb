// The serial reference of a program of statements (ir::StatementProgram as the runtime holds
// it: one ProblemSpec a statement, in order): the value of any element of any of its
// tensors, computed from the statements as stated and the fill formula of runtime/fill.h
// alone — a program input's element is its fill hash; an element a statement writes is
// that statement's sum over its operands' values (ProblemSpec semantics, a `+=` output
// starting from its own fill), an operand written by an earlier statement read
// recursively. Each value carries the bounds of runtime/oracle.h (Expected): a run's error
// and the reference's, propagated through the chain — an intermediate's bounds are what
// the statements reading it start from. Elements are computed on demand and kept, so a
// check that samples a few rows of a final output pays for the rows of the intermediates
// they read, never for whole intermediates. Nothing of a lowered Program, a schedule or a
// run enters it. Not thread-safe (the memo); one object per checking rank.
#ifndef MESHTUNE_RUNTIME_PROGRAM_VALUES_H_
#define MESHTUNE_RUNTIME_PROGRAM_VALUES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/oracle.h"

namespace meshtune::runtime {

class ProgramValues {
 public:
  // `statements` in program order; a tensor written by statement s is read by later ones.
  // The bounds are those of a run in `precision`.
  ProgramValues(std::vector<ProblemSpec> statements, uint64_t seed, Precision precision);

  // The value and bounds of element `linear` (row-major) of `tensor`: written by the last
  // statement that writes it before `before` (the statement index reading it), else its fill.
  Expected Value(const std::string& tensor, int64_t linear, int before);
  // What Reference reads for the operands of statement `s`.
  OperandValues OperandsOf(int s);
  // The multiply-adds one element of statement `s`'s output costs when nothing is kept:
  // its terms times (1 + what each intermediate operand's element costs).
  int64_t ElementCost(int s) const;

 private:
  // The statement writing `tensor` last before statement `before`, or -1.
  int Writer(const std::string& tensor, int before) const;

  std::vector<ProblemSpec> statements_;
  uint64_t seed_;
  Precision precision_;
  std::vector<std::unique_ptr<Reference>> references_;  // per statement, over OperandsOf
  // Kept values per statement: output element -> value and bounds.
  std::vector<std::unordered_map<int64_t, Expected>> kept_;
};

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_PROGRAM_VALUES_H_
