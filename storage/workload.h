// Workloads: the identity under which the tuning database stores schedules.
//
// A workload is a problem up to the names of its indices and tensors, with its extents,
// dtype, mesh and hardware profile. `C[m,n] += A[m,k] * B[k,n]` and
// `Out[i,j] += X[i,l] * Y[l,j]` with corresponding extents are one workload: both
// canonicalise to `T0[i0,i1] += T1[i0,i2] * T2[i2,i1]`. Traces are stored with those
// canonical names and translated to and from each requester's names.
// Plain values; thread-safe to read.
#ifndef MESHTUNE_STORAGE_WORKLOAD_H_
#define MESHTUNE_STORAGE_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "ir/trace.h"

namespace meshtune::storage {

struct Workload {
  // Lowercase hex SHA-256 of `canonical` (64 characters): the database key.
  std::string fingerprint;
  // The text the fingerprint hashes, one "key: value" a line:
  //   expr: T0[i0,i1] += T1[i0,i2] * T2[i2,i1]
  //   extents: i0=1024,i1=1024,i2=512
  //   dtype: f32
  //   mesh: x=2,y=2
  //   profile: default
  //   layouts: T1=cyclic(64,64)      (only with given layouts)
  std::string canonical;
  std::string expr;     // canonical expression, "T0[i0,i1] += T1[i0,i2] * T2[i2,i1]"
  std::string extents;  // canonical extents in canonical index order, "i0=1024,i1=1024,i2=512"
  std::string dtype;    // "f32" / "f64"
  ir::Problem problem;  // the problem as the requester stated it (its names)
  // Where it runs: the mesh (no memory budget: that is no part of the identity), or, when
  // `ranks` is not 0, a rank count (a tune over every factorisation; `mesh` has no axes).
  ir::Mesh mesh;
  int64_t ranks = 0;
  std::string profile;  // hardware profile name; "" when none
  // Given layouts in canonical tensor names, "T0=cyclic(64,64),T1=root"; "" when every
  // tensor is block (the canonical text then has no layouts line, as before layouts).
  std::string layouts;
  // The requester's names: index_names[j] is canonical index "i<j>", tensor_names[j] is
  // canonical tensor "T<j>" (order of first appearance, the output first; in a program,
  // statement by statement).
  std::vector<std::string> index_names;
  std::vector<std::string> tensor_names;
  // A program of several statements (ir/statement_program.h), in the requester's names, in
  // order; empty for one statement (`problem`, which is then the first statement). Its
  // canonical expr is the statements' canonical texts joined by "; ", and its traces are
  // program traces (ir/program_trace.h): one per statement, separated by lines "---".
  std::vector<ir::Problem> statements;

  bool IsProgram() const { return !statements.empty(); }

  // True when the workload is a rank count: a tune over every factorisation.
  bool IsRankCount() const { return ranks != 0; }
  // The mesh as the canonical text and the database key it: "x=2,y=2", or "ranks=4" for a
  // rank count.
  std::string MeshText() const;
};

// The workload of problem `p` on `mesh` with hardware profile `profile`. Axis names are part
// of the identity because traces name them in distribute and shard calls; no axis may be
// called "ranks" (the key's name for a rank count), except alone: a mesh of the one axis
// ranks=N is the rank count N. `profile` is empty or a valid hardware profile name.
// InvalidArgument naming the offending token for a bad mesh (also a mesh axis named like an
// index or a tensor of `p`) or profile name.
absl::StatusOr<Workload> MakeWorkload(const ir::Problem& p, const ir::Mesh& mesh,
                                      const std::string& profile);

// The workload of problem `p` over every factorisation of `ranks` ranks (1 to
// ir::kMaxRanks). InvalidArgument for a rank count out of range or a bad profile name.
absl::StatusOr<Workload> MakeWorkload(const ir::Problem& p, int64_t ranks,
                                      const std::string& profile);

// The workload of a program of statements on `mesh`, or on `ranks` ranks: the workload of
// its one statement when it has one (the same fingerprint), else a program's (above).
// MakeWorkload's errors, for any statement.
absl::StatusOr<Workload> MakeWorkload(const ir::StatementProgram& program, const ir::Mesh& mesh,
                                      const std::string& profile);
absl::StatusOr<Workload> MakeWorkload(const ir::StatementProgram& program, int64_t ranks,
                                      const std::string& profile);

// The workload of `p` on `mesh_text` as a database row or a file stores it: mesh axes
// ("x=2,y=2", parsed with ir::ParseMesh) or "ranks=N". MakeWorkload's errors, and
// ParseMesh's for text that is neither.
absl::StatusOr<Workload> ReadWorkload(const ir::Problem& p, const std::string& mesh_text,
                                      const std::string& profile);
absl::StatusOr<Workload> ReadWorkload(const ir::StatementProgram& program,
                                      const std::string& mesh_text, const std::string& profile);

// Renames identifiers of the trace `trace_text` (validated with ir::ParseTrace): every
// loop, index, shard dim and tensor name that is a key of `renames` becomes its value, all
// at once (so swaps work); whole identifiers only (renaming `m` leaves `mo` alone), never
// mesh axes or kernel names. A name that is not a key but equals a rename target (a loop
// the trace creates, in the way of a renamed index) is renamed too, by appending '_'
// until it is unique. Returns the trace's
// canonical text (comments and blank lines dropped). InvalidArgument for a trace that does
// not parse, or when a rename target equals a mesh axis the trace uses.
absl::StatusOr<std::string> RenameTrace(const std::string& trace_text,
                                        const std::map<std::string, std::string>& renames);

// The trace `trace` (text, as a file or a message carries it), written with the requester's
// names of `w`, in canonical names
// (i0.., T0..). A problem's loops start in its indices' sorted order, which renaming can
// change, so a `reorder` of every index that restores the requester's starting order leads
// the result unless the orders agree (leading reorders of every index are merged).
absl::StatusOr<std::string> ToCanonicalTrace(const Workload& w, const std::string& trace);
// The same for a trace value (what the tuner found): no text is parsed.
absl::StatusOr<std::string> ToCanonicalTrace(const Workload& w, const ir::Trace& trace);

// For a program's workload, `trace` is a program trace: each statement's part translated
// so (its loops start in its own indices' order), the parts joined by lines "---".

// The inverse: a trace in canonical names (a database row's text), written with the requester's
// names of `w`, the same schedule on the requester's problem. For a program, each part
// after a comment line "# statement N: STATEMENT" (ir::ProgramTraceText).
absl::StatusOr<std::string> FromCanonicalTrace(const Workload& w, const std::string& trace);

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_WORKLOAD_H_
