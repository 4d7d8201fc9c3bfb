// NumPy arrays as a plan's tensors: shards allocated in a shard's layout, and the checks that
// an array the caller hands over is what the plan will read and write through its pointer
// (meshtune/plan.h, ShardLayout). No array is copied.
#ifndef MESHTUNE_PYTHON_SHARD_ARRAYS_H_
#define MESHTUNE_PYTHON_SHARD_ARRAYS_H_

#include <pybind11/numpy.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "meshtune/plan.h"

namespace meshtune::python {

// The NumPy dtype of a plan's "f32" (float32) or "f64" (float64).
pybind11::dtype DtypeOf(const std::string& dtype);

// A zero-filled array for `shard` (the plan's Shard, its strides those of the contract): by
// default a C-contiguous array of its extents; when the application `provides_storage`
// (Plan::ProvideStorage), shaped as its extents with its storage's strides, over a buffer of
// the whole storage (the rest of a short last block is the schedule's scratch).
pybind11::array NewShard(const ShardLayout& shard, const pybind11::dtype& dtype,
                         bool provides_storage);

// `array`'s data when it can be `tensor`'s shard as `shard` lays it out: a numpy.ndarray of
// `dtype`, writable unless `read_only_ok`, shaped as the shard's extents at the shard's
// strides; when the application `provides_storage`, shaped as its extents or as its storage,
// over memory that holds the whole storage. Otherwise InvalidArgument, the message starting
// with `tensor` and saying what differs. The plan reads and writes nothing else.
absl::StatusOr<void*> ShardData(const std::string& tensor, pybind11::handle array,
                                const ShardLayout& shard, const pybind11::dtype& dtype,
                                bool provides_storage, bool read_only_ok = false);

// `array`'s data when it is the whole of `tensor`: a C-contiguous numpy.ndarray of `dtype`
// and `shape`. Otherwise InvalidArgument, as above.
absl::StatusOr<void*> WholeData(const std::string& tensor, pybind11::handle array,
                                const std::vector<int64_t>& shape, const pybind11::dtype& dtype);

// "(5, 4)": a shape as Python writes a tuple.
std::string TupleText(const std::vector<int64_t>& v);

}  // namespace meshtune::python

#endif  // MESHTUNE_PYTHON_SHARD_ARRAYS_H_
