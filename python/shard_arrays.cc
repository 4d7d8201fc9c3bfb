#include "python/shard_arrays.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "python/status_error.h"

namespace py = pybind11;

namespace meshtune::python {
namespace {

// The array's shape and strides (bytes) as vectors.
std::vector<int64_t> ShapeOf(const py::array& a) {
  return std::vector<int64_t>(a.shape(), a.shape() + a.ndim());
}
std::vector<int64_t> StridesOf(const py::array& a) {
  return std::vector<int64_t>(a.strides(), a.strides() + a.ndim());
}

// Bytes from the first element of a layout to one past its last (0 for an empty one).
int64_t SpanBytes(const std::vector<int64_t>& storage, const std::vector<int64_t>& strides,
                  int64_t item) {
  int64_t last = 0;
  for (size_t d = 0; d < storage.size(); ++d) {
    if (storage[d] == 0) return 0;
    last += (storage[d] - 1) * strides[d];
  }
  return (last + 1) * item;
}

// Whether the memory `a` is a view of (its last numpy.ndarray base, as numpy.byte_bounds
// sees it) holds `bytes` bytes from a's first element.
bool HoldsBytes(const py::array& a, int64_t bytes) {
  if (bytes == 0) return true;
  py::object root = a;
  while (py::isinstance<py::array>(root.attr("base"))) root = root.attr("base");
  py::tuple bounds = py::module_::import("numpy").attr("byte_bounds")(root);
  const auto low = bounds[0].cast<uintptr_t>(), high = bounds[1].cast<uintptr_t>();
  const auto first = reinterpret_cast<uintptr_t>(a.data());
  return first >= low && first + static_cast<uintptr_t>(bytes) <= high;
}

// "float32": NumPy's name of a dtype.
std::string DtypeName(const py::dtype& d) { return d.attr("name").cast<std::string>(); }

// The checks every array passes: an ndarray of `dtype` with `dims` dimensions.
absl::StatusOr<py::array> TypedArray(const std::string& tensor, py::handle h,
                                     const py::dtype& dtype, size_t dims) {
  if (!py::isinstance<py::array>(h)) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, ": expected a numpy.ndarray, got ", TypeName(h)));
  }
  py::array a = py::reinterpret_borrow<py::array>(h);
  if (!a.dtype().equal(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(tensor, ": dtype ", DtypeName(a.dtype()),
                                                   ", but the plan's is ", DtypeName(dtype)));
  }
  if (static_cast<size_t>(a.ndim()) != dims) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, ": ", a.ndim(), " dimensions, but ", tensor, " has ", dims));
  }
  return a;
}

}  // namespace

std::string TupleText(const std::vector<int64_t>& v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), v.size() == 1 ? ",)" : ")");
}

py::dtype DtypeOf(const std::string& dtype) {
  return dtype == "f64" ? py::dtype::of<double>() : py::dtype::of<float>();
}

py::array NewShard(const ShardLayout& shard, const py::dtype& dtype, bool provides_storage) {
  const int64_t item = dtype.itemsize();
  std::vector<int64_t> strides;
  for (int64_t s : shard.strides) strides.push_back(s * item);
  int64_t elements = 1;
  for (int64_t e : provides_storage ? shard.storage : shard.extents) elements *= e;
  py::array buffer(dtype, std::vector<int64_t>{elements});
  if (elements > 0) std::memset(buffer.mutable_data(), 0, elements * item);
  return py::array(dtype, shard.extents, strides, buffer.data(), buffer);
}

namespace {

// InvalidArgument for an array of `shape` that is not `tensor`'s shard.
absl::Status ShapeError(const std::string& tensor, const std::vector<int64_t>& shape,
                        const ShardLayout& shard, bool provides_storage) {
  const bool ragged = shard.storage != shard.extents;
  const std::string stored =
      provides_storage && ragged ? absl::StrCat(", stored as ", TupleText(shard.storage)) : "";
  // An array of the storage under the default contract: say how to pass it.
  const std::string opt_in = !provides_storage && ragged && shape == shard.storage
                                 ? "; an array of its storage needs plan.provide_storage(True)"
                                 : "";
  return absl::InvalidArgumentError(absl::StrCat(
      tensor, ": shape ", TupleText(shape), ", but this rank's shard of ", tensor, " is ",
      TupleText(shard.extents), stored, " (plan.shard('", tensor, "'))", opt_in));
}

}  // namespace

absl::StatusOr<void*> ShardData(const std::string& tensor, py::handle array,
                                const ShardLayout& shard, const py::dtype& dtype,
                                bool provides_storage, bool read_only_ok) {
  absl::StatusOr<py::array> typed = TypedArray(tensor, array, dtype, shard.extents.size());
  if (!typed.ok()) return typed.status();
  py::array a = *typed;
  const std::vector<int64_t> shape = ShapeOf(a);
  // What the array's memory must hold: the extents, or the storage when provided.
  const bool stored = provides_storage && shard.storage != shard.extents;
  if (shape != shard.extents && !(stored && shape == shard.storage)) {
    return ShapeError(tensor, shape, shard, provides_storage);
  }
  const int64_t item = dtype.itemsize();
  std::vector<int64_t> want;
  for (int64_t s : shard.strides) want.push_back(s * item);
  const std::vector<int64_t> strides = StridesOf(a);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > 1 && strides[d] != want[d]) {
      const std::string other = !stored
                                    ? "a contiguous copy (numpy.ascontiguousarray)"
                                    : absl::StrCat("an array of shape ", TupleText(shard.storage),
                                                   " (plan.storage('", tensor, "'))");
      return absl::InvalidArgumentError(absl::StrCat(
          tensor, ": the array's strides ", TupleText(strides), " (bytes) are not the shard's ",
          TupleText(want), ": pass plan.empty_shards()['", tensor, "'] or ", other));
    }
  }
  if (!a.writeable() && !read_only_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, ": the array is read-only (the plan writes its shards)"));
  }
  if (stored && !HoldsBytes(a, SpanBytes(shard.storage, shard.strides, item))) {
    return absl::InvalidArgumentError(
        absl::StrCat(tensor, ": the array holds the shard's ", TupleText(shard.extents),
                     " but not the rest of its storage ", TupleText(shard.storage),
                     ", which the schedule uses (plan.provide_storage(True)): pass "
                     "plan.empty_shards()['",
                     tensor, "'] or an array of shape ", TupleText(shard.storage)));
  }
  return const_cast<void*>(a.data());
}

absl::StatusOr<void*> WholeData(const std::string& tensor, py::handle array,
                                const std::vector<int64_t>& shape, const py::dtype& dtype) {
  absl::StatusOr<py::array> typed = TypedArray(tensor, array, dtype, shape.size());
  if (!typed.ok()) return typed.status();
  const py::array& a = *typed;
  if (ShapeOf(a) != shape) {
    return absl::InvalidArgumentError(absl::StrCat(tensor, ": shape ", TupleText(ShapeOf(a)),
                                                   ", but ", tensor, " is ", TupleText(shape)));
  }
  if (!(a.flags() & py::array::c_style)) {
    return absl::InvalidArgumentError(absl::StrCat(
        tensor, ": the array is not C-contiguous (numpy.ascontiguousarray makes a copy that is)"));
  }
  return const_cast<void*>(a.data());
}

}  // namespace meshtune::python
