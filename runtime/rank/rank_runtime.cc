// RankRuntime<T> (rank_runtime.h): its construction, the factories of runtime/rank/rank.h that
// make one, and the lookups every concept uses.
#include "runtime/rank/rank_runtime.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "runtime/rank/rank.h"

namespace meshtune::runtime {

namespace internal {

template <typename T>
RankRuntime<T>::RankRuntime(std::unique_ptr<Comm> comm, std::vector<std::string> axis_names,
                            std::vector<TensorSpec> tensors, std::vector<BufferSpec> buffers,
                            ProblemSpec problem, bool accumulate, uint64_t seed, bool bound)
    : comm_(std::move(comm)),
      names_(std::move(axis_names)),
      tensors_(std::move(tensors)),
      problem_(std::move(problem)),
      accumulate_(accumulate),
      seed_(seed),
      bound_(bound) {
  rank_ = comm_->rank();
  size_ = comm_->size();
  coords_ = comm_->CoordsOf(rank_);
  for (const TensorSpec& t : tensors_) {
    Dense<T>& shard = shards_[t.name];
    if (bound_) {  // the caller's memory, bound later
      shard.shape = t.local_shape;
      shard.strides = DenseStrides(t.local_shape);
      bound_data_[t.name] = nullptr;
      // The caller's memory is in its given layout: the shard is this runtime's own.
      if (t.given) {
        shard.Resize(t.local_shape);
        internal_.insert(t.name);
      }
      continue;
    }
    shard.Resize(t.local_shape);
    if (t.given) {
      given_[t.name].assign(t.given->global.size(), T(0));
      if (!t.is_output) FillGiven(t);
    } else if (!t.is_output) {
      Fill(t);
    }
  }
  for (const BufferSpec& spec : buffers) {
    TransferBuffer<T>& b = buffers_[spec.name];
    b.shape = spec.shape;
    b.strides = DenseStrides(spec.shape);
    b.size = Elements(spec.shape);
    b.half[0].resize(b.size);
    b.cur = b.Own(b.half[0].data());
  }
}

template <typename T>
const TensorSpec& RankRuntime<T>::Tensor(const std::string& name) const {
  for (const TensorSpec& t : tensors_) {
    if (t.name == name) return t;
  }
  return tensors_[0];
}

// The output tensor.
template <typename T>
const TensorSpec& RankRuntime<T>::Output() const {
  for (const TensorSpec& t : tensors_) {
    if (t.is_output) return t;
  }
  return tensors_[0];
}

template <typename T>
bool RankRuntime<T>::Held(const TensorSpec& t, const Coords& coords,
                          const std::vector<int64_t>& off, const std::vector<int64_t>& size,
                          std::vector<int64_t>* lo, std::vector<int64_t>* len) const {
  lo->clear();
  len->clear();
  if (t.is_output && !AtCoordinateZero(t, coords)) return false;  // off the output's layer
  const std::vector<int64_t> start = t.block_start(coords);
  for (size_t d = 0; d < off.size(); ++d) {
    // The box, the rank's block and the tensor: past its shape a shard holds padding only
    // (codegen/program.h, where blocks do not divide an extent).
    const int64_t a = std::max({off[d], start[d], int64_t{0}});
    const int64_t b = std::min({off[d] + size[d], start[d] + t.local_shape[d], t.shape[d]});
    if (b <= a) return false;
    lo->push_back(a);
    len->push_back(b - a);
  }
  return true;
}

template class RankRuntime<float>;
template class RankRuntime<double>;

}  // namespace internal

using internal::RankRuntime;

std::unique_ptr<RankRuntimeBase> MakeRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                 const std::vector<std::string>& axis_names,
                                                 std::vector<TensorSpec> tensors,
                                                 std::vector<BufferSpec> buffers,
                                                 ProblemSpec problem, bool accumulate,
                                                 uint64_t seed) {
  if (dtype_bytes == 8) {
    return std::make_unique<RankRuntime<double>>(std::move(comm), axis_names, std::move(tensors),
                                                 std::move(buffers), std::move(problem), accumulate,
                                                 seed);
  }
  return std::make_unique<RankRuntime<float>>(std::move(comm), axis_names, std::move(tensors),
                                              std::move(buffers), std::move(problem), accumulate,
                                              seed);
}

std::unique_ptr<RankRuntimeBase> MakeBoundRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                      const std::vector<std::string>& axis_names,
                                                      std::vector<TensorSpec> tensors,
                                                      std::vector<BufferSpec> buffers,
                                                      bool accumulate) {
  if (dtype_bytes == 8) {
    return std::make_unique<RankRuntime<double>>(std::move(comm), axis_names, std::move(tensors),
                                                 std::move(buffers), ProblemSpec{}, accumulate, 0,
                                                 /*bound=*/true);
  }
  return std::make_unique<RankRuntime<float>>(std::move(comm), axis_names, std::move(tensors),
                                              std::move(buffers), ProblemSpec{}, accumulate, 0,
                                              /*bound=*/true);
}

}  // namespace meshtune::runtime
