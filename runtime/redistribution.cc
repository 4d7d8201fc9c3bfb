#include "runtime/redistribution.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/box.h"

namespace meshtune::runtime {

namespace {

// The rows of a tensor of `shape`: the product of every extent but the last.
int64_t Rows(const std::vector<int64_t>& shape) {
  return shape.empty() ? 1 : Elements(std::vector<int64_t>(shape.begin(), shape.end() - 1));
}

// Every rank's coordinates, by row-major rank id.
std::vector<std::vector<int64_t>> RankCoords(const ir::Mesh& mesh) {
  std::vector<int64_t> sizes;
  for (const ir::MeshAxis& a : mesh.axes) sizes.push_back(a.size);
  std::vector<std::vector<int64_t>> out;
  ForEachPoint(sizes, [&](const std::vector<int64_t>& c) { out.push_back(c); });
  return out;
}

// The leading indices (all but the last) of row `row` of `shape`.
std::vector<int64_t> Leading(const std::vector<int64_t>& shape, int64_t row) {
  std::vector<int64_t> out(shape.empty() ? 0 : shape.size() - 1);
  for (size_t d = out.size(); d-- > 0;) {
    out[d] = row % shape[d];
    row /= shape[d];
  }
  return out;
}

class Given : public Distribution {
 public:
  Given(const ir::GivenLayout& layout, std::vector<int64_t> shape, const ir::Mesh& mesh)
      : layout_(layout),
        shape_(std::move(shape)),
        coords_(RankCoords(mesh)),
        placement_(layout, shape_, mesh) {}

  int64_t rows() const override { return Rows(shape_); }

  std::vector<Run> Row(int64_t row) const override {
    const int64_t cols = shape_.back();
    std::vector<int64_t> index = Leading(shape_, row);
    index.push_back(0);
    std::vector<Run> out;
    if (layout_.kind != ir::GivenLayout::Kind::kCyclic) {
      const int64_t offset = placement_.LocalOffset(index);
      for (size_t r = 0; r < coords_.size(); ++r) {
        if (placement_.Holds(coords_[r], index))
          out.push_back({0, cols, static_cast<int>(r), offset, 1});
      }
      return out;
    }
    // Column blocks of NB, each on the grid column that deals it, in the grid row of row i.
    const int64_t nb = layout_.nb;
    for (int64_t begin = 0; begin < cols; begin += nb) {
      index[1] = begin;
      for (size_t r = 0; r < coords_.size(); ++r) {
        if (!placement_.Holds(coords_[r], index)) continue;
        const int64_t lld = std::max<int64_t>(
            1, ir::Numroc(shape_[0], layout_.mb, coords_[r][0], placement_.grid_rows()));
        out.push_back({begin, std::min(cols, begin + nb), static_cast<int>(r),
                       placement_.LocalOffset(index), lld});
      }
    }
    return out;
  }

  int64_t LocalElements(int rank) const override {
    return placement_.LocalElements(coords_[static_cast<size_t>(rank)]);
  }

 private:
  ir::GivenLayout layout_;
  std::vector<int64_t> shape_;
  std::vector<std::vector<int64_t>> coords_;
  ir::Placement placement_;
};

class Boxes : public Distribution {
 public:
  Boxes(std::vector<int64_t> shape, const ir::Mesh& mesh,
        const std::function<Box(const std::vector<int64_t>&)>& box_of)
      : shape_(std::move(shape)) {
    for (const std::vector<int64_t>& c : RankCoords(mesh)) boxes_.push_back(box_of(c));
  }

  int64_t rows() const override { return Rows(shape_); }

  // A box's storage is its full extent; it holds the part within the tensor's shape (`row`
  // lies within it on the leading dims; the last dim's run is clipped to it).
  std::vector<Run> Row(int64_t row) const override {
    const std::vector<int64_t> lead = Leading(shape_, row);
    const size_t last = shape_.size() - 1;
    std::vector<Run> out;
    for (size_t r = 0; r < boxes_.size(); ++r) {
      const Box& b = boxes_[r];
      if (b.extent.empty() || Elements(b.extent) == 0) continue;
      int64_t offset = 0;
      bool inside = true;
      for (size_t d = 0; d < last && inside; ++d) {
        inside = lead[d] >= b.start[d] && lead[d] < b.start[d] + b.extent[d];
        offset = offset * b.extent[d] + (lead[d] - b.start[d]);
      }
      if (!inside) continue;
      const int64_t begin = std::max<int64_t>(b.start[last], 0);
      const int64_t end = std::min(b.start[last] + b.extent[last], shape_[last]);
      if (end <= begin) continue;  // past the tensor's shape: padding only
      out.push_back(
          {begin, end, static_cast<int>(r), offset * b.extent[last] + (begin - b.start[last]), 1});
    }
    return out;
  }

  int64_t LocalElements(int rank) const override {
    const Box& b = boxes_[static_cast<size_t>(rank)];
    return b.extent.empty() ? 0 : Elements(b.extent);
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<Box> boxes_;
};

}  // namespace

std::unique_ptr<Distribution> GivenDistribution(const ir::GivenLayout& layout,
                                                std::vector<int64_t> shape, const ir::Mesh& mesh) {
  if (layout.kind == ir::GivenLayout::Kind::kGrid) {  // a box per rank
    const ir::Placement placement(layout, shape, mesh);
    return std::make_unique<Boxes>(shape, mesh, [&](const std::vector<int64_t>& c) {
      Box b;
      placement.GridBox(c, &b.start, &b.extent);
      return b;
    });
  }
  return std::make_unique<Given>(layout, std::move(shape), mesh);
}

std::unique_ptr<Distribution> BoxDistribution(
    std::vector<int64_t> shape, const ir::Mesh& mesh,
    std::function<Box(const std::vector<int64_t>& coords)> box_of) {
  return std::make_unique<Boxes>(std::move(shape), mesh, box_of);
}

absl::StatusOr<std::vector<Piece>> PlanRedistribution(const Distribution& from,
                                                      const Distribution& to) {
  if (from.rows() != to.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the distributions have ", from.rows(), " and ", to.rows(), " rows"));
  }
  std::vector<Piece> out;
  for (int64_t row = 0; row < to.rows(); ++row) {
    const std::vector<Run> sources = from.Row(row);
    for (const Run& want : to.Row(row)) {
      // Cut [begin, end) at every source boundary inside it; each cut from one source.
      std::vector<int64_t> cuts = {want.begin, want.end};
      for (const Run& s : sources) {
        for (int64_t c : {s.begin, s.end}) {
          if (c > want.begin && c < want.end) cuts.push_back(c);
        }
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        const int64_t a = cuts[i], b = cuts[i + 1];
        const Run* best = nullptr;
        for (const Run& s : sources) {
          if (s.begin > a || s.end < b) continue;
          if (best == nullptr || s.rank == want.rank ||
              (best->rank != want.rank && s.rank < best->rank))
            best = &s;
        }
        if (best == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("row ", row, " column ", a,
                                                         " is needed by rank ", want.rank,
                                                         " and held by no rank"));
        }
        out.push_back({best->rank, want.rank, b - a,
                       best->offset + (a - best->begin) * best->stride, best->stride,
                       want.offset + (a - want.begin) * want.stride, want.stride});
      }
    }
  }
  return out;
}

namespace {

// Copies `length` elements `from` (stride `from_stride`) `to` (stride `to_stride`).
template <typename T>
void CopyRun(const T* from, int64_t from_stride, T* to, int64_t to_stride, int64_t length) {
  if (from_stride == 1 && to_stride == 1) {
    std::memcpy(to, from, static_cast<size_t>(length) * sizeof(T));
    return;
  }
  for (int64_t k = 0; k < length; ++k) to[k * to_stride] = from[k * from_stride];
}

}  // namespace

template <typename T>
void Redistribute(const std::vector<Piece>& plan, const T* from, T* to, Comm& comm) {
  const int me = comm.rank();
  const size_t n = static_cast<size_t>(comm.size());
  std::vector<int64_t> out_count(n, 0), in_count(n, 0);
  for (const Piece& p : plan) {
    if (p.from == me && p.to != me) out_count[static_cast<size_t>(p.to)] += p.length;
    if (p.to == me && p.from != me) in_count[static_cast<size_t>(p.from)] += p.length;
  }
  std::vector<std::vector<T>> out(n), in(n);  // per peer, in plan order
  for (size_t r = 0; r < n; ++r) {
    out[r].resize(static_cast<size_t>(out_count[r]));
    in[r].resize(static_cast<size_t>(in_count[r]));
  }
  std::vector<int64_t> at(n, 0);  // per peer: how much of its buffer is packed
  for (const Piece& p : plan) {
    if (p.from != me) continue;
    const T* src = from + p.from_offset;
    if (p.to == me) {
      CopyRun(src, p.from_stride, to + p.to_offset, p.to_stride, p.length);
    } else {
      const size_t peer = static_cast<size_t>(p.to);
      CopyRun(src, p.from_stride, out[peer].data() + at[peer], 1, p.length);
      at[peer] += p.length;
    }
  }
  std::vector<Message> sends, recvs;
  for (size_t r = 0; r < n; ++r) {
    if (out_count[r] > 0) sends.push_back({static_cast<int>(r), out[r].data(), out_count[r]});
    if (in_count[r] > 0) recvs.push_back({static_cast<int>(r), in[r].data(), in_count[r]});
  }
  const DataType type = std::is_same_v<T, double> ? DataType::kDouble : DataType::kFloat;
  comm.Alltoallv(sends, recvs, type);
  std::fill(at.begin(), at.end(), 0);  // per peer: how much of its buffer is unpacked
  for (const Piece& p : plan) {
    if (p.to != me || p.from == me) continue;
    const size_t peer = static_cast<size_t>(p.from);
    CopyRun(in[peer].data() + at[peer], 1, to + p.to_offset, p.to_stride, p.length);
    at[peer] += p.length;
  }
}

template void Redistribute<float>(const std::vector<Piece>&, const float*, float*, Comm&);
template void Redistribute<double>(const std::vector<Piece>&, const double*, double*, Comm&);

}  // namespace meshtune::runtime
