// A program of statements: several index-notation statements (ir/problem.h) run in order,
// sharing tensor names and index extents.
//
// `H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]` with b=2048,d=1024,e=1024,f=4096
// is a StatementProgram: X, W1 and W2 are its inputs, H an intermediate (written by one
// statement, read by a later one) and Y its output. Each statement is a complete Problem;
// ParseStatementProgram validates each one as ParseProblem does and the program as a whole
// (one shape per tensor, one writer, no read before the write). Plain values; thread-safe to
// read.
#ifndef MESHTUNE_IR_STATEMENT_PROGRAM_H_
#define MESHTUNE_IR_STATEMENT_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/problem.h"

namespace meshtune::ir {

// A program of statements: several index-notation statements run in order, sharing tensor
// names and index extents. E.g. "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]".
struct StatementProgram {
  enum class Role { kInput, kIntermediate, kOutput };

  // In order; each parsed by ParseProblem with only its own indices' extents.
  std::vector<Problem> statements;
  // Every index of every statement.
  std::map<std::string, int64_t> extents;
  DType dtype = DType::kF32;

  // Distinct tensor names in order of first appearance (statement by statement, output
  // first then operands).
  std::vector<std::string> Tensors() const;
  // Input: read, never written; intermediate: written by one statement and read by a later
  // one; output: written and never read later. CHECK-fails for an unknown tensor.
  Role RoleOf(const std::string& tensor) const;
  // Index of the statement writing `tensor`, -1 for an input (or an unknown tensor).
  int Producer(const std::string& tensor) const;
  // Where `tensor` lives for the statements after the first to touch it: the statement
  // writing it, or for an input the first statement reading it (-1 for an unknown tensor).
  int Home(const std::string& tensor) const;
  // Indices of the statements reading `tensor`, ascending (empty for an unknown tensor).
  std::vector<int> Consumers(const std::string& tensor) const;
  // Extents of `tensor`'s dims. CHECK-fails for an unknown tensor.
  std::vector<int64_t> Shape(const std::string& tensor) const;
  // The tensors of role kOutput, in order of first appearance.
  std::vector<std::string> Outputs() const;
  // The tensors of role kIntermediate, in order of first appearance.
  std::vector<std::string> Intermediates() const;
  // Each statement's Problem::ToString joined by "; ".
  std::string ToString() const;
  // Every extent sorted by index name: "b=2048,d=1024,e=1024,f=4096".
  std::string ExtentsString() const;
  // Renaming-invariant canonical text: tensors renamed T0,T1,... and indices i0,i1,... in
  // order of first appearance over the whole program (output before operands, statement by
  // statement, indices left to right within an access), then
  // "T0[i0,i1] = T1[i0,i2] * T2[i2,i1]; ..." + " with " + extents in canonical index order
  // "i0=2048,i1=4096,..." + " " + dtype name. Two programs that differ only by the names of
  // tensors and indices have equal fingerprints; any other difference (an extent, an
  // operator, '=' vs '+=', the dtype, statement order) gives different ones.
  std::string Fingerprint() const;
  // True for a program of one statement.
  bool single() const { return statements.size() == 1; }
};

// Parses `expr`: statements separated by ';' or newlines (empty statements between
// separators, blank lines and a trailing ';' are skipped; '#' starts a comment running to
// the end of the line), with extents text as ParseProblem takes it ("b=2048,d=1024"; shared
// by index name across the statements) and dtype ("f32"/"f64"/empty = f32). Each statement
// is parsed with ParseProblem given only the extents of its own indices, and its errors are
// returned prefixed with "statement N: " (1-based) when there are several statements; a
// program of one statement (or of none, without a ';') parses exactly as ParseProblem
// would, its limits and messages included. InvalidArgument naming the offending tensor,
// index or statement for: separators with no statement, more than kMaxStatements
// statements, text over kMaxProgramBytes, an extent for an index no statement uses, a tensor
// with two shapes (or ranks) in two statements, a tensor written by two statements, a tensor
// read by a statement and written by a later one, and an intermediate written with '+='.
absl::StatusOr<StatementProgram> ParseStatementProgram(absl::string_view expr,
                                                       absl::string_view extents,
                                                       absl::string_view dtype = "f32");

// One statement as a program of one (its extents and dtype).
StatementProgram ProgramOf(const Problem& problem);

// Limits on a program, enforced with clear errors (each statement also has ParseProblem's
// kMaxExpressionBytes).
inline constexpr int kMaxStatements = 16;
inline constexpr size_t kMaxProgramBytes = 16384;

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_STATEMENT_PROGRAM_H_
