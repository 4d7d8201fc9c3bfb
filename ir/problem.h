// A tensor computation in index notation: one statement, its index extents and dtype.
//
// `C[m,n] += A[m,k] * B[k,n]` with m=512,n=1024,k=2048 is a Problem. Problems are plain
// values: parsed once, validated completely by ParseProblem (every index has an extent,
// shapes agree, no index repeats in a tensor, ...), then shared read-only. Thread-safe to
// read.
#ifndef MESHTUNE_IR_PROBLEM_H_
#define MESHTUNE_IR_PROBLEM_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/given_layout.h"

namespace meshtune::ir {

enum class DType { kF32, kF64 };

// "f32" / "f64".
absl::string_view DTypeName(DType t);
int64_t DTypeBytes(DType t);

// One tensor access, e.g. A[m,k].
struct TensorAccess {
  std::string tensor;
  std::vector<std::string> indices;

  std::string ToString() const;  // "A[m,k]"
  bool operator==(const TensorAccess& o) const {
    return tensor == o.tensor && indices == o.indices;
  }
};

struct Problem {
  enum class Assign { kSet, kAccumulate };  // '=' or '+='
  enum class Combine { kProduct, kSum };    // operands multiplied (contraction) or added

  TensorAccess output;
  Assign assign = Assign::kSet;
  Combine combine = Combine::kProduct;
  std::vector<TensorAccess> operands;  // 1 to 3 for a product, exactly 2 for a sum
  // Every index, sorted by name: the order of the statement's domain dimensions.
  std::vector<std::string> indices;
  std::map<std::string, int64_t> extents;
  DType dtype = DType::kF32;
  // Where the application's tensors already are (ir/layout.h): a fixed layout (never
  // block) per tensor named; a tensor not named is block, laid out as the schedule likes.
  // Set by SetLayouts; ParseProblem leaves it empty.
  std::map<std::string, GivenLayout> layouts;
  // Where a schedule copies the output along a mesh axis: false (the default), every copy
  // holds the result after a run; true, only the copies at coordinate 0 of the axis do (the
  // reduction onto that layer saves the step to the others; codegen::LayerAxes).
  bool result_on_layer = false;

  // Distinct tensor names, the output first, then operands in order of appearance.
  std::vector<std::string> Tensors() const;
  // The first access of `tensor` (its dims are named after these indices).
  const TensorAccess* FirstAccess(const std::string& tensor) const;
  // Extents of `tensor`'s dims. CHECK-fails for an unknown tensor.
  std::vector<int64_t> Shape(const std::string& tensor) const;
  bool IsOutput(const std::string& tensor) const { return tensor == output.tensor; }
  // An index that the output does not carry (summed over).
  bool IsReductionIndex(const std::string& index) const;
  int IndexPosition(const std::string& index) const;  // position in `indices`, or -1
  // Canonical text: "C[m,n] += A[m,k] * B[k,n]".
  std::string ToString() const;
  // Canonical extents text in index order: "k=2048,m=512,n=1024".
  std::string ExtentsString() const;
  // The given layouts as `--layout` flags, by tensor name: {"A=cyclic(64,64)", "C=root"}.
  std::vector<std::string> LayoutFlags() const;
  // The fixed given layout of `tensor`, or nullptr when it is block.
  const GivenLayout* LayoutOf(const std::string& tensor) const;
};

// Parses `expr` (one statement) with extents text ("m=512,n=1024,k=2048"; commas or
// spaces separate entries) and dtype ("f32", "f64"; empty means f32).
// Returns InvalidArgument naming the offending token, index or extent for: empty or
// oversized input, non-ASCII bytes, syntax errors and unbalanced brackets, a tensor read
// with two ranks or shapes, an index repeated within one access, an output index that no
// operand reads, an index without an extent or an extent for an unknown index, and
// extents that are zero, negative, overflow, or make a tensor (over 2^48 elements) or the
// iteration space (over 2^62 points) too large.
absl::StatusOr<Problem> ParseProblem(absl::string_view expr, absl::string_view extents,
                                     absl::string_view dtype = "f32");

// Parses only the extents text; entries "name=value", separated by commas or spaces.
absl::StatusOr<std::map<std::string, int64_t>> ParseExtents(absl::string_view text);

// Limits on input sizes, enforced with clear errors.
inline constexpr size_t kMaxExpressionBytes = 4096;
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 48;
// The most points of an iteration space (the product of every extent): counts of points,
// and twice them (flops), fit in int64_t.
inline constexpr int64_t kMaxIterationPoints = int64_t{1} << 62;

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_PROBLEM_H_
