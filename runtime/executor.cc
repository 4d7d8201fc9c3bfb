#include "runtime/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/fill.h"
#include "runtime/kernels.h"

namespace meshtune::runtime {

namespace {

using codegen::Block;
using codegen::CommPattern;
using codegen::Compute;
using codegen::Expr;
using codegen::For;
using codegen::Program;
using codegen::StmtPtr;
using codegen::TensorInfo;

template <typename T>
MPI_Datatype MpiType();
template <>
MPI_Datatype MpiType<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype MpiType<double>() { return MPI_DOUBLE; }

// A dense row-major buffer.
template <typename T>
struct Buffer {
  std::vector<int64_t> shape, strides;
  std::vector<T> data;

  void Resize(const std::vector<int64_t>& s) {
    shape = s;
    strides.assign(s.size(), 1);
    for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * s[d + 1];
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    data.assign(n, T(0));
  }
  int64_t Offset(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
    return o;
  }
};

// Calls fn(index vector) for every point of the box `size`, last dim fastest.
void ForEachPoint(const std::vector<int64_t>& size, const std::function<void(const std::vector<int64_t>&)>& fn) {
  for (int64_t s : size) {
    if (s <= 0) return;
  }
  std::vector<int64_t> idx(size.size(), 0);
  while (true) {
    fn(idx);
    int d = static_cast<int>(size.size()) - 1;
    while (d >= 0 && ++idx[d] == size[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

template <typename T>
void CopyBox(const Buffer<T>& src, const std::vector<int64_t>& src_off, Buffer<T>& dst,
             const std::vector<int64_t>& dst_off, const std::vector<int64_t>& size) {
  if (size.empty()) {
    dst.data[0] = src.data[0];
    return;
  }
  std::vector<int64_t> outer(size.begin(), size.end() - 1);
  const int64_t row = size.back();
  std::vector<int64_t> s(size.size()), d(size.size());
  ForEachPoint(outer, [&](const std::vector<int64_t>& idx) {
    for (size_t k = 0; k + 1 < size.size(); ++k) {
      s[k] = src_off[k] + idx[k];
      d[k] = dst_off[k] + idx[k];
    }
    s.back() = src_off.back();
    d.back() = dst_off.back();
    std::memcpy(&dst.data[dst.Offset(d)], &src.data[src.Offset(s)], row * sizeof(T));
  });
}

template <typename T>
class Runner {
 public:
  Runner(const Program& p, MPI_Comm comm, const ExecOptions& o) : p_(p), opt_(o) {
    std::vector<int> dims(p.axis_sizes.begin(), p.axis_sizes.end()), periods(dims.size(), 1);
    MPI_Cart_create(comm, static_cast<int>(dims.size()), dims.data(), periods.data(), 0, &cart_);
    MPI_Comm_rank(cart_, &rank_);
    MPI_Comm_size(cart_, &size_);
    coords_ = CoordsOf(rank_);
    for (const TensorInfo& t : p.tensors) shards_[t.name].Resize(t.local_shape);
    for (const codegen::Alloc& a : p.buffers) buffers_[a.buffer].Resize(a.shape);
    FillInputs();
  }
  ~Runner() {
    for (auto& [mask, c] : subs_) MPI_Comm_free(&c);
    MPI_Comm_free(&cart_);
  }

  ExecResult Run() {
    ExecResult r;
    for (int i = 0; i < opt_.warmup + opt_.reps; ++i) {
      ResetOutput();
      bytes_ = 0;
      MPI_Barrier(cart_);
      const double t0 = MPI_Wtime();
      Exec(p_.body);
      double dt = MPI_Wtime() - t0, worst = 0;
      MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, cart_);
      if (i >= opt_.warmup) r.seconds.push_back(worst);
    }
    long long mine = bytes_, most = 0;
    MPI_Allreduce(&mine, &most, 1, MPI_LONG_LONG, MPI_MAX, cart_);
    r.bytes_sent_max = most;
    if (opt_.inject_fault == "wrong" && rank_ == 0) {
      Buffer<T>& out = shards_[Output().name];
      if (!out.data.empty()) out.data[out.data.size() / 2] += T(1);
    }
    std::string error = Verify();
    double local_sum = 0, sum = 0;
    for (T v : shards_[Output().name].data) local_sum += v;
    MPI_Allreduce(&local_sum, &sum, 1, MPI_DOUBLE, MPI_SUM, cart_);
    r.checksum = sum;
    r.error = FirstError(error);
    r.verified = r.error.empty();
    return r;
  }

 private:
  const TensorInfo& Output() const {
    for (const TensorInfo& t : p_.tensors) {
      if (t.is_output) return t;
    }
    return p_.tensors[0];
  }

  std::vector<int64_t> CoordsOf(int rank) const {
    std::vector<int> c(p_.axis_sizes.size());
    MPI_Cart_coords(cart_, rank, static_cast<int>(c.size()), c.data());
    return std::vector<int64_t>(c.begin(), c.end());
  }
  int RankOf(const std::vector<int64_t>& coords) const {
    std::vector<int> c(coords.begin(), coords.end());
    int r = 0;
    MPI_Cart_rank(cart_, c.data(), &r);
    return r;
  }

  // Value of a variable: a mesh coordinate of `coords` or a loop variable.
  int64_t Lookup(const std::string& name, const std::vector<int64_t>& coords) const {
    for (size_t a = 0; a < p_.axis_names.size(); ++a) {
      if (p_.axis_names[a] == name) return coords[a];
    }
    for (const auto& [var, value] : loops_) {
      if (var == name) return value;
    }
    return 0;
  }
  std::vector<int64_t> Eval(const std::vector<Expr>& es, const std::vector<int64_t>& coords) const {
    std::vector<int64_t> out;
    for (const Expr& e : es) out.push_back(e.Eval([&](const std::string& n) { return Lookup(n, coords); }));
    return out;
  }
  std::vector<int64_t> Eval(const std::vector<Expr>& es) const { return Eval(es, coords_); }

  // Global index of the first element of `t`'s shard on the rank at `coords`.
  std::vector<int64_t> BlockStart(const TensorInfo& t, const std::vector<int64_t>& coords) const {
    std::vector<int64_t> start;
    for (const codegen::DimLayout& l : t.layout) {
      int64_t s = 0;
      for (const auto& [block, index] : l.blocks) {
        s += block * index.Eval([&](const std::string& n) { return Lookup(n, coords); });
      }
      start.push_back(s);
    }
    return start;
  }

  static int64_t Linear(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o = o * shape[d] + idx[d];
    return o;
  }

  void FillTensor(const TensorInfo& t) {
    Buffer<T>& b = shards_[t.name];
    const std::vector<int64_t> start = BlockStart(t, coords_);
    std::vector<int64_t> g(start.size());
    int64_t i = 0;
    ForEachPoint(t.local_shape, [&](const std::vector<int64_t>& l) {
      for (size_t d = 0; d < l.size(); ++d) g[d] = start[d] + l[d];
      b.data[i++] = static_cast<T>(ElementValue(opt_.seed, t.name, Linear(g, t.shape)));
    });
    if (t.local_shape.empty()) b.data[0] = static_cast<T>(ElementValue(opt_.seed, t.name, 0));
  }
  void FillInputs() {
    for (const TensorInfo& t : p_.tensors) {
      if (!t.is_output) FillTensor(t);
    }
  }
  void ResetOutput() {
    const TensorInfo& out = Output();
    if (p_.accumulate) {
      FillTensor(out);
    } else {
      std::fill(shards_[out.name].data.begin(), shards_[out.name].data.end(), T(0));
    }
  }

  MPI_Comm Sub(const std::vector<int>& axes) {
    int mask = 0;
    for (int a : axes) mask |= 1 << a;
    auto it = subs_.find(mask);
    if (it != subs_.end()) return it->second;
    std::vector<int> keep(p_.axis_sizes.size(), 0);
    for (int a : axes) keep[a] = 1;
    MPI_Comm c;
    MPI_Cart_sub(cart_, keep.data(), &c);
    subs_[mask] = c;
    return c;
  }
  int SubRank(MPI_Comm sub, const std::vector<int>& axes, const std::vector<int64_t>& coords) const {
    std::vector<int> c;
    for (int a : axes) c.push_back(static_cast<int>(coords[a]));
    int r = 0;
    MPI_Cart_rank(sub, c.data(), &r);
    return r;
  }

  void Exec(const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) Exec(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      const int64_t lo = f->lo.Eval([&](const std::string& n) { return Lookup(n, coords_); });
      loops_.emplace_back(f->var, lo);
      for (int64_t i = 0; i < f->extent; ++i) {
        loops_.back().second = lo + i;
        Exec(f->body);
      }
      loops_.pop_back();
    } else if (const auto* a = std::get_if<codegen::Alloc>(&s->node)) {
      if (a->zero) std::fill(buffers_[a->buffer].data.begin(), buffers_[a->buffer].data.end(), T(0));
    } else if (const auto* t = std::get_if<codegen::Transfer>(&s->node)) {
      Fetch(*t);
    } else if (const auto* c = std::get_if<Compute>(&s->node)) {
      Kernel(*c);
    } else if (const auto* r = std::get_if<codegen::Reduce>(&s->node)) {
      ReduceOut(*r);
    }
  }

  // ---- input transfers ----------------------------------------------------------------

  void Fetch(const codegen::Transfer& t) {
    Buffer<T>& buf = buffers_[t.buffer];
    const Buffer<T>& shard = shards_[t.tensor];
    const std::vector<int64_t> zeros(buf.shape.size(), 0);
    const std::vector<int64_t> src = Eval(t.source);
    const int n = static_cast<int>(buf.data.size());
    switch (t.pattern.kind) {
      case CommPattern::Kind::kLocal:
        CopyBox(shard, Eval(t.src.offset), buf, zeros, t.src.size);
        return;
      case CommPattern::Kind::kBroadcast: {
        MPI_Comm sub = Sub(t.pattern.axes);
        const int root = SubRank(sub, t.pattern.axes, src);
        int me = 0;
        MPI_Comm_rank(sub, &me);
        if (me == root) {
          CopyBox(shard, Eval(t.src.offset), buf, zeros, t.src.size);
          bytes_ += static_cast<int64_t>(n) * sizeof(T);
        }
        MPI_Bcast(buf.data.data(), n, MpiType<T>(), root, sub);
        return;
      }
      case CommPattern::Kind::kShift:
        if (Lookup(t.time_loop, coords_) != 0) {
          int from = 0, to = 0;
          MPI_Cart_shift(cart_, t.pattern.axes[0], -t.pattern.shift, &from, &to);
          MPI_Sendrecv_replace(buf.data.data(), n, MpiType<T>(), to, 7, from, 7, cart_, MPI_STATUS_IGNORE);
          bytes_ += static_cast<int64_t>(n) * sizeof(T);
          return;
        }
        [[fallthrough]];
      default:
        PointToPoint(t, buf, shard, src);
    }
  }

  // Every rank works out, for every rank, where that rank's data comes from: it sends to
  // those it is the source for and receives from its own source.
  void PointToPoint(const codegen::Transfer& t, Buffer<T>& buf, const Buffer<T>& shard,
                    const std::vector<int64_t>& src) {
    std::vector<MPI_Request> reqs;
    std::vector<Buffer<T>> packed;
    packed.reserve(size_);
    const std::vector<int64_t> zeros(buf.shape.size(), 0);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const std::vector<int64_t> c = CoordsOf(r);
      if (Eval(t.source, c) != coords_) continue;
      packed.emplace_back();
      packed.back().Resize(buf.shape);
      CopyBox(shard, Eval(t.src.offset, c), packed.back(), zeros, t.src.size);
      reqs.emplace_back();
      MPI_Isend(packed.back().data.data(), static_cast<int>(packed.back().data.size()), MpiType<T>(), r, 11,
                cart_, &reqs.back());
      bytes_ += static_cast<int64_t>(packed.back().data.size()) * sizeof(T);
    }
    if (src == coords_) {
      CopyBox(shard, Eval(t.src.offset), buf, zeros, t.src.size);
    } else {
      reqs.emplace_back();
      MPI_Irecv(buf.data.data(), static_cast<int>(buf.data.size()), MpiType<T>(), RankOf(src), 11, cart_,
                &reqs.back());
    }
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  }

  // ---- output reductions --------------------------------------------------------------

  // The part of box (offset, size) that the rank at `coords` holds, clipped; false if none.
  bool Held(const TensorInfo& t, const std::vector<int64_t>& coords, const std::vector<int64_t>& off,
            const std::vector<int64_t>& size, std::vector<int64_t>* lo, std::vector<int64_t>* len) const {
    const std::vector<int64_t> start = BlockStart(t, coords);
    lo->clear();
    len->clear();
    for (size_t d = 0; d < off.size(); ++d) {
      const int64_t a = std::max(off[d], start[d]);
      const int64_t b = std::min(off[d] + size[d], start[d] + t.local_shape[d]);
      if (b <= a) return false;
      lo->push_back(a);
      len->push_back(b - a);
    }
    return true;
  }

  // Adds `part` (the box at global `off`) into this rank's shard where it holds it.
  void AddHeld(const TensorInfo& t, const Buffer<T>& part, const std::vector<int64_t>& off) {
    std::vector<int64_t> lo, len;
    if (!Held(t, coords_, off, part.shape, &lo, &len)) return;
    const std::vector<int64_t> start = BlockStart(t, coords_);
    Buffer<T>& shard = shards_[t.name];
    std::vector<int64_t> s(lo.size()), d(lo.size());
    ForEachPoint(len, [&](const std::vector<int64_t>& i) {
      for (size_t k = 0; k < i.size(); ++k) {
        s[k] = lo[k] + i[k] - off[k];
        d[k] = lo[k] + i[k] - start[k];
      }
      shard.data[shard.Offset(d)] += part.data[part.Offset(s)];
    });
    if (lo.empty()) shard.data[0] += part.data[0];
  }

  // Members of my group along `axes` (my coordinates elsewhere), in sub-communicator order.
  std::vector<std::vector<int64_t>> Group(const std::vector<int>& axes) const {
    std::vector<int64_t> extent;
    for (int a : axes) extent.push_back(p_.axis_sizes[a]);
    std::vector<std::vector<int64_t>> out;
    ForEachPoint(extent, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> c = coords_;
      for (size_t k = 0; k < axes.size(); ++k) c[axes[k]] = i[k];
      out.push_back(c);
    });
    return out;
  }

  void ReduceOut(const codegen::Reduce& r) {
    const TensorInfo& t = *p_.Tensor(r.tensor);
    Buffer<T>& part = buffers_[r.buffer];
    const std::vector<int64_t> off = Eval(r.global.offset);
    const int n = static_cast<int>(part.data.size());
    switch (r.pattern.kind) {
      case CommPattern::Kind::kAllReduce: {
        MPI_Allreduce(MPI_IN_PLACE, part.data.data(), n, MpiType<T>(), MPI_SUM, Sub(r.pattern.axes));
        bytes_ += static_cast<int64_t>(n) * sizeof(T);
        AddHeld(t, part, off);
        return;
      }
      case CommPattern::Kind::kReduce:
      case CommPattern::Kind::kReduceScatter: {
        MPI_Comm sub = Sub(r.pattern.axes);
        for (const std::vector<int64_t>& g : Group(r.pattern.axes)) {
          std::vector<int64_t> lo, len;
          if (!Held(t, g, off, part.shape, &lo, &len)) continue;
          std::vector<int64_t> rel(lo.size());
          for (size_t d = 0; d < lo.size(); ++d) rel[d] = lo[d] - off[d];
          Buffer<T> piece, sum;
          piece.Resize(len);
          sum.Resize(len);
          CopyBox(part, rel, piece, std::vector<int64_t>(len.size(), 0), len);
          const int root = SubRank(sub, r.pattern.axes, g);
          MPI_Reduce(piece.data.data(), sum.data.data(), static_cast<int>(piece.data.size()), MpiType<T>(),
                     MPI_SUM, root, sub);
          bytes_ += static_cast<int64_t>(piece.data.size()) * sizeof(T);
          if (g == coords_) AddHeld(t, sum, lo);
        }
        return;
      }
      default:
        AddHeld(t, part, off);
    }
  }

  // ---- compute --------------------------------------------------------------------------

  TileOperand<T> Tile(const codegen::Operand& o, const std::vector<std::string>& indices) {
    Buffer<T>& b = o.buffer == o.tensor ? shards_[o.buffer] : buffers_[o.buffer];
    TileOperand<T> t;
    t.base = b.data.data() + b.Offset(Eval(o.slice.offset));
    for (const std::string& idx : indices) {
      int64_t s = 0;
      for (size_t d = 0; d < o.dims.size(); ++d) {
        if (o.dims[d] == idx) s += b.strides[d];
      }
      t.strides.push_back(s);
    }
    return t;
  }

  void Kernel(const Compute& c) {
    std::vector<std::string> indices;
    std::vector<int64_t> extents;
    for (const auto& [idx, e] : c.tile) {
      indices.push_back(idx);
      extents.push_back(e);
    }
    const TileOperand<T> out = Tile(c.out, indices);
    std::vector<TileOperand<T>> in;
    for (const codegen::Operand& o : c.in) in.push_back(Tile(o, indices));
    if (c.kernel.rfind("matmul", 0) == 0 && in.size() == 2 && c.out.dims.size() >= 2) {
      auto pos = [&](const std::string& name) {
        return static_cast<int>(std::find(indices.begin(), indices.end(), name) - indices.begin());
      };
      const std::string& i = c.out.dims[c.out.dims.size() - 2];
      const std::string& j = c.out.dims.back();
      std::string k;
      for (const std::string& d : c.in[0].dims) {
        if (std::find(c.out.dims.begin(), c.out.dims.end(), d) == c.out.dims.end()) k = d;
      }
      if (!k.empty() && GemmKernel(extents, pos(i), pos(j), pos(k), out, in[0], in[1])) return;
    }
    GenericKernel(extents, out, in, c.sum);
  }

  // ---- verification -----------------------------------------------------------------------

  const Compute* FindCompute(const StmtPtr& s) const {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) {
        if (const Compute* k = FindCompute(c)) return k;
      }
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      return FindCompute(f->body);
    } else if (const auto* c = std::get_if<Compute>(&s->node)) {
      return c;
    }
    return nullptr;
  }

  std::string Verify() {
    const Compute* c = FindCompute(p_.body);
    const TensorInfo& out = Output();
    std::map<std::string, int64_t> extent;
    for (const TensorInfo& t : p_.tensors) {
      for (size_t d = 0; d < t.dims.size(); ++d) extent[t.dims[d]] = t.shape[d];
    }
    std::vector<std::string> reduction;
    for (const auto& [idx, e] : extent) {
      if (std::find(out.dims.begin(), out.dims.end(), idx) == out.dims.end()) reduction.push_back(idx);
    }
    std::vector<int64_t> red_extent;
    int64_t red_size = 1;
    for (const std::string& r : reduction) {
      red_extent.push_back(extent[r]);
      red_size *= extent[r];
    }
    const Buffer<T>& shard = shards_[out.name];
    const int64_t local = static_cast<int64_t>(shard.data.size());
    const int64_t step = local * red_size > opt_.full_verify_limit
                             ? std::max<int64_t>(1, local / std::max<int64_t>(1, opt_.full_verify_limit / red_size))
                             : 1;
    const std::vector<int64_t> start = BlockStart(out, coords_);
    const double tol = sizeof(T) == 4 ? 2e-4 : 1e-10;
    std::map<std::string, int64_t> at;
    int64_t i = 0;
    std::string error;
    ForEachPoint(out.local_shape.empty() ? std::vector<int64_t>{1} : out.local_shape,
                 [&](const std::vector<int64_t>& l) {
      const int64_t flat = i++;
      if (!error.empty() || flat % step != 0) return;
      std::vector<int64_t> g;
      for (size_t d = 0; d < out.dims.size(); ++d) {
        g.push_back(start[d] + l[d]);
        at[out.dims[d]] = g.back();
      }
      double ref = p_.accumulate ? ElementValue(opt_.seed, out.name, Linear(g, out.shape)) : 0.0;
      double mag = std::abs(ref);
      ForEachPoint(red_extent.empty() ? std::vector<int64_t>{1} : red_extent, [&](const std::vector<int64_t>& ri) {
        for (size_t k = 0; k < reduction.size(); ++k) at[reduction[k]] = ri[k];
        double term = c->sum ? 0.0 : 1.0;
        for (const codegen::Operand& o : c->in) {
          const TensorInfo& t = *p_.Tensor(o.tensor);
          std::vector<int64_t> e;
          for (const std::string& d : o.dims) e.push_back(at[d]);
          const double v = ElementValue(opt_.seed, t.name, Linear(e, t.shape));
          term = c->sum ? term + v : term * v;
        }
        ref += term;
        mag += std::abs(term);
      });
      const double got = shard.data[flat];
      if (!(std::abs(got - ref) <= tol * mag + 1e-6)) {
        std::vector<std::string> coord;
        for (size_t a = 0; a < coords_.size(); ++a) coord.push_back(absl::StrCat(p_.axis_names[a], "=", coords_[a]));
        error = absl::StrFormat("rank (%s): %s[%s] = %.6g but the reference is %.6g", absl::StrJoin(coord, ", "),
                                out.name, absl::StrJoin(g, ", "), got, ref);
      }
    });
    return error;
  }

  // The error of the lowest rank that has one, on every rank.
  std::string FirstError(const std::string& mine) {
    int flag = mine.empty() ? size_ : rank_, first = 0;
    MPI_Allreduce(&flag, &first, 1, MPI_INT, MPI_MIN, cart_);
    if (first == size_) return "";
    std::vector<char> text(512, 0);
    if (rank_ == first) std::strncpy(text.data(), mine.c_str(), text.size() - 1);
    MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, first, cart_);
    return std::string(text.data());
  }

  const Program& p_;
  ExecOptions opt_;
  MPI_Comm cart_;
  int rank_ = 0, size_ = 1;
  std::vector<int64_t> coords_;
  std::map<std::string, Buffer<T>> shards_, buffers_;
  std::map<int, MPI_Comm> subs_;
  std::vector<std::pair<std::string, int64_t>> loops_;
  int64_t bytes_ = 0;
};

}  // namespace

ExecResult Execute(const Program& program, MPI_Comm comm, const ExecOptions& options) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  if (size != program.Ranks()) {
    ExecResult r;
    r.error = absl::StrCat("the mesh has ", program.Ranks(), " ranks but the job has ", size);
    return r;
  }
  if (program.dtype_bytes == 8) return Runner<double>(program, comm, options).Run();
  return Runner<float>(program, comm, options).Run();
}

}  // namespace meshtune::runtime
