#include "codegen/program_proto.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "codegen/pattern.h"
#include "ir/layout.h"
#include "ir/mesh.h"

namespace meshtune::codegen {
namespace {

using PExpr = v1::Program::Expr;
using PPattern = v1::Program::CommPattern;

// Statements and expressions nest at most this deep (lowered programs: a few levels).
constexpr int kMaxDepth = 64;

// The one mapping of expression operators to the message's, both ways.
struct OpRow {
  Expr::Op op;
  PExpr::Op proto;
};
constexpr OpRow kOps[] = {
    {Expr::Op::kConst, PExpr::OP_CONST}, {Expr::Op::kVar, PExpr::OP_VAR},
    {Expr::Op::kAdd, PExpr::OP_ADD},     {Expr::Op::kSub, PExpr::OP_SUB},
    {Expr::Op::kMul, PExpr::OP_MUL},     {Expr::Op::kFloorDiv, PExpr::OP_FLOOR_DIV},
    {Expr::Op::kMod, PExpr::OP_MOD},     {Expr::Op::kNeg, PExpr::OP_NEG},
    {Expr::Op::kMin, PExpr::OP_MIN},     {Expr::Op::kMax, PExpr::OP_MAX},
    {Expr::Op::kEq, PExpr::OP_EQ},       {Expr::Op::kLe, PExpr::OP_LE},
    {Expr::Op::kLt, PExpr::OP_LT},       {Expr::Op::kGe, PExpr::OP_GE},
    {Expr::Op::kGt, PExpr::OP_GT},       {Expr::Op::kAnd, PExpr::OP_AND},
    {Expr::Op::kOr, PExpr::OP_OR},       {Expr::Op::kSelect, PExpr::OP_SELECT},
};

// The one mapping of communication pattern kinds to the message's, both ways.
struct KindRow {
  PatternKind kind;
  PPattern::Kind proto;
};
constexpr KindRow kKinds[] = {
    {PatternKind::kLocal, PPattern::KIND_LOCAL},
    {PatternKind::kBroadcast, PPattern::KIND_BROADCAST},
    {PatternKind::kShift, PPattern::KIND_SHIFT},
    {PatternKind::kSendRecv, PPattern::KIND_SEND_RECV},
    {PatternKind::kAllGather, PPattern::KIND_ALL_GATHER},
    {PatternKind::kReduce, PPattern::KIND_REDUCE},
    {PatternKind::kReduceScatter, PPattern::KIND_REDUCE_SCATTER},
    {PatternKind::kAllReduce, PPattern::KIND_ALL_REDUCE},
    {PatternKind::kAllToAll, PPattern::KIND_ALL_TO_ALL},
    {PatternKind::kRingReduce, PPattern::KIND_RING_REDUCE},
};

// ---- To the message ----

void ExprTo(const Expr& e, PExpr* out) {
  out->set_op(OpToProto(e.op()));
  if (e.op() == Expr::Op::kConst) out->set_value(e.value());
  if (e.op() == Expr::Op::kVar) out->set_name(e.name());
  for (const Expr& a : e.args()) ExprTo(a, out->add_args());
}

void PatternTo(const CommPattern& p, PPattern* out) {
  out->set_kind(PatternKindToProto(p.kind));
  for (int a : p.axes) out->add_axes(a);
  out->set_shift(p.shift);
  out->set_hop(p.hop);
}

void SliceTo(const Slice& s, v1::Program::Slice* out) {
  for (const Expr& e : s.offset) ExprTo(e, out->add_offset());
  for (int64_t n : s.size) out->add_size(n);
}

void AllocTo(const Alloc& a, v1::Program::Alloc* out) {
  out->set_buffer(a.buffer);
  for (int64_t n : a.shape) out->add_shape(n);
  out->set_zero(a.zero);
}

void OperandTo(const Operand& o, v1::Program::Operand* out) {
  out->set_tensor(o.tensor);
  out->set_buffer(o.buffer);
  for (const std::string& d : o.dims) out->add_dims(d);
  SliceTo(o.slice, out->mutable_slice());
}

void StmtTo(const StmtPtr& s, v1::Program::Stmt* out) {
  if (s == nullptr) return;
  if (const auto* b = std::get_if<Block>(&s->node)) {
    v1::Program::Block* m = out->mutable_block();
    for (const StmtPtr& c : b->body) StmtTo(c, m->add_body());
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    v1::Program::For* m = out->mutable_for_loop();
    m->set_var(f->var);
    ExprTo(f->lo, m->mutable_lo());
    m->set_extent(f->extent);
    StmtTo(f->body, m->mutable_body());
  } else if (const auto* a = std::get_if<Alloc>(&s->node)) {
    AllocTo(*a, out->mutable_alloc());
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    v1::Program::Transfer* m = out->mutable_transfer();
    m->set_tensor(t->tensor);
    m->set_buffer(t->buffer);
    m->set_loop(t->loop);
    m->set_time_loop(t->time_loop);
    PatternTo(t->pattern, m->mutable_pattern());
    for (const Expr& e : t->source) ExprTo(e, m->add_source());
    SliceTo(t->src, m->mutable_src());
    SliceTo(t->global, m->mutable_global());
    m->set_prefetch(t->prefetch);
  } else if (const auto* c = std::get_if<Compute>(&s->node)) {
    v1::Program::Compute* m = out->mutable_compute();
    m->set_kernel(c->kernel);
    m->set_sum(c->sum);
    OperandTo(c->out, m->mutable_out());
    for (const Operand& o : c->in) OperandTo(o, m->add_in());
    for (size_t i = 0; i < c->tile.size(); ++i) {
      v1::Program::Tile* t = m->add_tile();
      t->set_index(c->tile[i].first);
      t->set_extent(c->tile[i].second);
      if (!c->start.empty()) {
        ExprTo(c->start[i], t->mutable_start());
        t->set_index_extent(c->extent[i]);
      }
    }
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    v1::Program::Reduce* m = out->mutable_reduce();
    m->set_tensor(r->tensor);
    m->set_buffer(r->buffer);
    m->set_loop(r->loop);
    PatternTo(r->pattern, m->mutable_pattern());
    SliceTo(r->global, m->mutable_global());
    m->set_prefetch(r->prefetch);
  }
}

// ---- From the message ----

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// The product of `dims` (each at least `min`), or an error when one is smaller or the
// product exceeds 2^48 elements.
absl::StatusOr<int64_t> Elements(const std::string& path, const std::string& field,
                                 const google::protobuf::RepeatedField<int64_t>& dims,
                                 int64_t min) {
  constexpr int64_t kMax = int64_t{1} << 48;
  int64_t n = 1;
  for (int i = 0; i < dims.size(); ++i) {
    if (dims[i] < min) {
      return Bad(path, absl::StrCat(field, "[", i, "] is ", dims[i], ", less than ", min));
    }
    if (dims[i] > 0 && n > kMax / dims[i]) {
      return Bad(path, absl::StrCat(field, " has more than 2^48 elements"));
    }
    n *= dims[i];
  }
  return n;
}

// Reads a v1::Program, checking each part against what it refers to.
class Reader {
 public:
  absl::StatusOr<Program> Read(const v1::Program& m);

 private:
  absl::StatusOr<Expr> ReadExpr(const PExpr& m, const std::string& path, int depth) const;
  absl::StatusOr<std::vector<Expr>> ReadExprs(const google::protobuf::RepeatedPtrField<PExpr>& m,
                                              const std::string& path) const;
  absl::StatusOr<CommPattern> ReadPattern(const PPattern& m, const std::string& path) const;
  // `offsetless`: the slice may have sizes only (an AllGather's source box).
  absl::StatusOr<Slice> ReadSlice(const v1::Program::Slice& m, const std::string& path, size_t rank,
                                  bool offsetless = false) const;
  absl::StatusOr<TensorInfo> ReadTensor(const v1::Program::Tensor& m, const std::string& path);
  absl::StatusOr<Alloc> ReadAlloc(const v1::Program::Alloc& m, const std::string& path) const;
  absl::StatusOr<Operand> ReadOperand(const v1::Program::Operand& m, const std::string& path) const;
  absl::StatusOr<StmtPtr> ReadStmt(const v1::Program::Stmt& m, const std::string& path, int depth);
  absl::StatusOr<Transfer> ReadTransfer(const v1::Program::Transfer& m, const std::string& path);
  absl::StatusOr<Compute> ReadCompute(const v1::Program::Compute& m, const std::string& path);
  absl::StatusOr<Reduce> ReadReduce(const v1::Program::Reduce& m, const std::string& path);
  // The tensor named `name`, or an error naming `path`.
  absl::StatusOr<const TensorInfo*> TensorNamed(const std::string& name,
                                                const std::string& path) const;
  // An error unless `name` is one of the program's transfer buffers.
  absl::Status CheckBuffer(const std::string& name, const std::string& path) const;
  // An error unless `loop` is empty or the variable of an enclosing For.
  absl::Status CheckLoop(const std::string& field, const std::string& loop,
                         const std::string& path) const;

  Program p_;
  std::vector<std::string> scope_;  // mesh axes, then the variables of the enclosing Fors
  int computes_ = 0;
};

absl::StatusOr<Expr> Reader::ReadExpr(const PExpr& m, const std::string& path, int depth) const {
  if (depth > kMaxDepth) return Bad(path, absl::StrCat("nested deeper than ", kMaxDepth));
  const absl::StatusOr<Expr::Op> op = OpFromProto(m.op());
  if (!op.ok()) return Bad(path, std::string(op.status().message()));
  const Expr::Op kind = *op;
  const size_t want = kind == Expr::Op::kConst || kind == Expr::Op::kVar ? 0
                      : kind == Expr::Op::kNeg                           ? 1
                      : kind == Expr::Op::kSelect                        ? 3
                                                                         : 2;
  const std::string op_name = PExpr::Op_Name(m.op());
  if (static_cast<size_t>(m.args_size()) != want) {
    return Bad(path, absl::StrCat(op_name, " takes ", want, " operands, not ", m.args_size()));
  }
  if (kind != Expr::Op::kConst && m.value() != 0) {
    return Bad(path, absl::StrCat(op_name, " has a value (", m.value(), ")"));
  }
  if (kind != Expr::Op::kVar && !m.name().empty()) {
    return Bad(path, absl::StrCat(op_name, " has a name (", m.name(), ")"));
  }
  if (kind == Expr::Op::kConst) return Expr::Const(m.value());
  if (kind == Expr::Op::kVar) {
    if (std::find(scope_.begin(), scope_.end(), m.name()) == scope_.end()) {
      return Bad(path, absl::StrCat("variable \"", m.name(),
                                    "\" is neither a mesh axis nor an enclosing loop"));
    }
    return Expr::Var(m.name());
  }
  if ((kind == Expr::Op::kFloorDiv || kind == Expr::Op::kMod) &&
      !(m.args(1).op() == PExpr::OP_CONST && m.args(1).value() > 0)) {
    return Bad(path, absl::StrCat(op_name, " must divide by a positive constant"));
  }
  std::vector<Expr> args;
  for (int i = 0; i < m.args_size(); ++i) {
    MT_ASSIGN_OR_RETURN(Expr a,
                        ReadExpr(m.args(i), absl::StrCat(path, ".args[", i, "]"), depth + 1));
    args.push_back(std::move(a));
  }
  // Constant operands fold in Make: keep the folding in range.
  if (kind == Expr::Op::kAdd || kind == Expr::Op::kSub || kind == Expr::Op::kMul) {
    int64_t r = 0;
    const bool consts = args[0].IsConst() && args[1].IsConst();
    const bool overflow =
        consts &&
        (kind == Expr::Op::kAdd   ? __builtin_add_overflow(args[0].value(), args[1].value(), &r)
         : kind == Expr::Op::kSub ? __builtin_sub_overflow(args[0].value(), args[1].value(), &r)
                                  : __builtin_mul_overflow(args[0].value(), args[1].value(), &r));
    if (overflow) return Bad(path, absl::StrCat(op_name, " of two constants overflows"));
  }
  if (kind == Expr::Op::kNeg && args[0].IsConst() &&
      args[0].value() == std::numeric_limits<int64_t>::min()) {
    return Bad(path, "OP_NEG of the smallest integer overflows");
  }
  return Expr::Make(kind, std::move(args));
}

absl::StatusOr<std::vector<Expr>> Reader::ReadExprs(
    const google::protobuf::RepeatedPtrField<PExpr>& m, const std::string& path) const {
  std::vector<Expr> out;
  for (int i = 0; i < m.size(); ++i) {
    MT_ASSIGN_OR_RETURN(Expr e, ReadExpr(m.Get(i), absl::StrCat(path, "[", i, "]"), 0));
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<CommPattern> Reader::ReadPattern(const PPattern& m, const std::string& path) const {
  const absl::StatusOr<PatternKind> kind = PatternKindFromProto(m.kind());
  if (!kind.ok()) return Bad(path, std::string(kind.status().message()));
  CommPattern p;
  p.kind = *kind;
  for (int a : m.axes()) {
    if (a < 0 || a >= static_cast<int>(p_.axis_names.size())) {
      return Bad(path, absl::StrCat("axis ", a, " is not an axis of the mesh (0 to ",
                                    p_.axis_names.size() - 1, ")"));
    }
    if (std::find(p.axes.begin(), p.axes.end(), a) != p.axes.end()) {
      return Bad(path, absl::StrCat("axis ", a, " is named twice"));
    }
    p.axes.push_back(a);
  }
  p.shift = m.shift();
  p.hop = m.hop();
  if (const std::string bad = PatternOf(p.kind).CheckForm(p); !bad.empty()) return Bad(path, bad);
  return p;
}

absl::StatusOr<Slice> Reader::ReadSlice(const v1::Program::Slice& m, const std::string& path,
                                        size_t rank, bool offsetless) const {
  const bool offsets_ok =
      static_cast<size_t>(m.offset_size()) == rank || (offsetless && m.offset_size() == 0);
  if (!offsets_ok || static_cast<size_t>(m.size_size()) != rank) {
    return Bad(path, absl::StrCat("has ", m.offset_size(), " offsets and ", m.size_size(),
                                  " sizes; the tensor has ", rank, " dims"));
  }
  Slice s;
  MT_ASSIGN_OR_RETURN(s.offset, ReadExprs(m.offset(), path + ".offset"));
  MT_RETURN_IF_ERROR(Elements(path, "size", m.size(), 0).status());
  s.size.assign(m.size().begin(), m.size().end());
  return s;
}

absl::StatusOr<TensorInfo> Reader::ReadTensor(const v1::Program::Tensor& m,
                                              const std::string& path) {
  TensorInfo t;
  t.name = m.name();
  if (t.name.empty()) return Bad(path, "a tensor without a name");
  const int rank = m.dims_size();
  if (m.shape_size() != rank || m.local_shape_size() != rank ||
      (m.layout_size() != 0 && m.layout_size() != rank)) {
    return Bad(path, absl::StrCat("tensor ", t.name, " has ", rank, " dims, ", m.shape_size(),
                                  " extents, ", m.local_shape_size(), " local extents and ",
                                  m.layout_size(), " dim layouts"));
  }
  t.dims.assign(m.dims().begin(), m.dims().end());
  MT_RETURN_IF_ERROR(Elements(path, "shape", m.shape(), 1).status());
  MT_RETURN_IF_ERROR(Elements(path, "local_shape", m.local_shape(), 1).status());
  t.shape.assign(m.shape().begin(), m.shape().end());
  t.local_shape.assign(m.local_shape().begin(), m.local_shape().end());
  for (int d = 0; d < rank; ++d) {
    // Past the extent only by padding (program.h: blocks that do not divide), which is
    // less than the extent again plus the ranks.
    if (t.local_shape[d] > 2 * t.shape[d] + ir::kMaxRanks) {
      return Bad(path, absl::StrCat("tensor ", t.name, " dim ", d, ": local extent ",
                                    t.local_shape[d], " is more than twice the extent ", t.shape[d],
                                    " plus ", ir::kMaxRanks));
    }
  }
  for (int d = 0; d < m.layout_size(); ++d) {
    DimLayout layout;
    for (int b = 0; b < m.layout(d).blocks_size(); ++b) {
      const auto& block = m.layout(d).blocks(b);
      const std::string at = absl::StrCat(path, ".layout[", d, "].blocks[", b, "]");
      if (block.size() < 1) return Bad(at, absl::StrCat("block size ", block.size()));
      // A block index is over the mesh coordinates only (scope_ holds just the axes here).
      MT_ASSIGN_OR_RETURN(Expr index, ReadExpr(block.index(), at + ".index", 0));
      layout.blocks.emplace_back(block.size(), std::move(index));
    }
    t.layout.push_back(std::move(layout));
  }
  t.is_output = m.is_output();
  if (!m.given().empty()) {
    absl::StatusOr<ir::GivenLayout> given = ir::ParseLayout(m.given());
    if (!given.ok()) return Bad(path + ".given", std::string(given.status().message()));
    t.given = *given;
  }
  return t;
}

absl::StatusOr<Alloc> Reader::ReadAlloc(const v1::Program::Alloc& m,
                                        const std::string& path) const {
  if (m.buffer().empty()) return Bad(path, "a buffer without a name");
  MT_RETURN_IF_ERROR(Elements(path, "shape", m.shape(), 0).status());
  Alloc a;
  a.buffer = m.buffer();
  a.shape.assign(m.shape().begin(), m.shape().end());
  a.zero = m.zero();
  return a;
}

absl::StatusOr<const TensorInfo*> Reader::TensorNamed(const std::string& name,
                                                      const std::string& path) const {
  const TensorInfo* t = p_.Tensor(name);
  if (t == nullptr) return Bad(path, absl::StrCat("tensor ", name, " is not one of the program's"));
  return t;
}

absl::Status Reader::CheckBuffer(const std::string& name, const std::string& path) const {
  for (const Alloc& a : p_.buffers) {
    if (a.buffer == name) return absl::OkStatus();
  }
  return Bad(path, absl::StrCat("buffer ", name, " is not one of the program's buffers"));
}

absl::Status Reader::CheckLoop(const std::string& field, const std::string& loop,
                               const std::string& path) const {
  if (loop.empty() || std::find(scope_.begin() + static_cast<std::ptrdiff_t>(p_.axis_names.size()),
                                scope_.end(), loop) != scope_.end()) {
    return absl::OkStatus();
  }
  return Bad(path, absl::StrCat(field, " ", loop, " is not an enclosing loop"));
}

absl::StatusOr<Operand> Reader::ReadOperand(const v1::Program::Operand& m,
                                            const std::string& path) const {
  Operand o;
  o.tensor = m.tensor();
  o.buffer = m.buffer();
  MT_ASSIGN_OR_RETURN(const TensorInfo* t, TensorNamed(o.tensor, path));
  if (o.buffer != t->name) MT_RETURN_IF_ERROR(CheckBuffer(o.buffer, path));
  o.dims.assign(m.dims().begin(), m.dims().end());
  MT_ASSIGN_OR_RETURN(o.slice, ReadSlice(m.slice(), path + ".slice", o.dims.size()));
  return o;
}

absl::StatusOr<Transfer> Reader::ReadTransfer(const v1::Program::Transfer& m,
                                              const std::string& path) {
  Transfer t;
  t.tensor = m.tensor();
  t.buffer = m.buffer();
  t.loop = m.loop();
  t.time_loop = m.time_loop();
  MT_ASSIGN_OR_RETURN(const TensorInfo* tensor, TensorNamed(t.tensor, path));
  MT_RETURN_IF_ERROR(CheckBuffer(t.buffer, path));
  MT_RETURN_IF_ERROR(CheckLoop("time_loop", t.time_loop, path));
  MT_ASSIGN_OR_RETURN(t.pattern, ReadPattern(m.pattern(), path + ".pattern"));
  // An AllGather's or AllToAll's data comes from the ranks that hold it: no source, no
  // source box.
  const bool gather = t.pattern.FromHolders();
  if (static_cast<size_t>(m.source_size()) != p_.axis_names.size() &&
      !(gather && m.source_size() == 0)) {
    return Bad(path, absl::StrCat("source has ", m.source_size(), " coordinates; the mesh has ",
                                  p_.axis_names.size(), " axes"));
  }
  MT_ASSIGN_OR_RETURN(t.source, ReadExprs(m.source(), path + ".source"));
  MT_ASSIGN_OR_RETURN(t.src, ReadSlice(m.src(), path + ".src", tensor->dims.size(), gather));
  MT_ASSIGN_OR_RETURN(t.global, ReadSlice(m.global(), path + ".global", tensor->dims.size()));
  if (m.prefetch() != 0 && m.prefetch() != 1) {
    return Bad(path, absl::StrCat("prefetch is ", m.prefetch(), ", not 0 or 1"));
  }
  t.prefetch = m.prefetch();
  return t;
}

absl::StatusOr<Compute> Reader::ReadCompute(const v1::Program::Compute& m,
                                            const std::string& path) {
  static const char* kKernels[] = {"matmul", "matmul_ta", "matmul_tb",  "matmul_tab",
                                   "mul",    "add",       "contraction"};
  if (std::none_of(std::begin(kKernels), std::end(kKernels),
                   [&](const char* k) { return m.kernel() == k; })) {
    return Bad(path, absl::StrCat("kernel \"", m.kernel(), "\" is not one of ",
                                  absl::StrJoin(kKernels, ", ")));
  }
  if (++computes_ > 1) return Bad(path, "a second kernel call (a program has one)");
  Compute c;
  c.kernel = m.kernel();
  c.sum = m.sum();
  MT_ASSIGN_OR_RETURN(c.out, ReadOperand(m.out(), path + ".out"));
  for (int i = 0; i < m.in_size(); ++i) {
    MT_ASSIGN_OR_RETURN(Operand o, ReadOperand(m.in(i), absl::StrCat(path, ".in[", i, "]")));
    c.in.push_back(std::move(o));
  }
  for (int i = 0; i < m.tile_size(); ++i) {
    if (m.tile(i).extent() < 1) {
      return Bad(absl::StrCat(path, ".tile[", i, "]"),
                 absl::StrCat("extent ", m.tile(i).extent(), " of ", m.tile(i).index()));
    }
    c.tile.emplace_back(m.tile(i).index(), m.tile(i).extent());
  }
  // Clipping (a ragged index) is given for every tile index or for none.
  for (int i = 0; i < m.tile_size(); ++i) {
    const std::string at = absl::StrCat(path, ".tile[", i, "]");
    if (m.tile(i).has_start() != m.tile(0).has_start()) {
      return Bad(at, "a start on some tile indices only (give one on every index or on none)");
    }
    if (!m.tile(i).has_start()) continue;
    if (m.tile(i).index_extent() < 0) {
      return Bad(at, absl::StrCat("index extent ", m.tile(i).index_extent(), " is negative"));
    }
    MT_ASSIGN_OR_RETURN(Expr start, ReadExpr(m.tile(i).start(), at + ".start", 0));
    c.start.push_back(std::move(start));
    c.extent.push_back(m.tile(i).index_extent());
  }
  return c;
}

absl::StatusOr<Reduce> Reader::ReadReduce(const v1::Program::Reduce& m, const std::string& path) {
  Reduce r;
  r.tensor = m.tensor();
  r.buffer = m.buffer();
  r.loop = m.loop();
  MT_ASSIGN_OR_RETURN(const TensorInfo* tensor, TensorNamed(r.tensor, path));
  MT_RETURN_IF_ERROR(CheckBuffer(r.buffer, path));
  MT_ASSIGN_OR_RETURN(r.pattern, ReadPattern(m.pattern(), path + ".pattern"));
  MT_ASSIGN_OR_RETURN(r.global, ReadSlice(m.global(), path + ".global", tensor->dims.size()));
  if (m.prefetch() != 0 && m.prefetch() != 1) {
    return Bad(path, absl::StrCat("prefetch is ", m.prefetch(), ", not 0 or 1"));
  }
  r.prefetch = m.prefetch();
  return r;
}

absl::StatusOr<StmtPtr> Reader::ReadStmt(const v1::Program::Stmt& m, const std::string& path,
                                         int depth) {
  if (depth > kMaxDepth) return Bad(path, absl::StrCat("nested deeper than ", kMaxDepth));
  switch (m.node_case()) {
    case v1::Program::Stmt::kBlock: {
      Block b;
      for (int i = 0; i < m.block().body_size(); ++i) {
        MT_ASSIGN_OR_RETURN(
            StmtPtr s,
            ReadStmt(m.block().body(i), absl::StrCat(path, ".block.body[", i, "]"), depth + 1));
        b.body.push_back(std::move(s));
      }
      return MakeStmt(std::move(b));
    }
    case v1::Program::Stmt::kForLoop: {
      const v1::Program::For& f = m.for_loop();
      const std::string at = path + ".for_loop";
      if (f.var().empty()) return Bad(at, "a loop without a variable");
      if (std::find(scope_.begin(), scope_.end(), f.var()) != scope_.end()) {
        return Bad(at, absl::StrCat("loop variable ", f.var(),
                                    " is already a mesh axis or an enclosing loop"));
      }
      if (f.extent() < 0) return Bad(at, absl::StrCat("extent ", f.extent()));
      For out;
      out.var = f.var();
      out.extent = f.extent();
      MT_ASSIGN_OR_RETURN(out.lo, ReadExpr(f.lo(), at + ".lo", 0));
      scope_.push_back(f.var());
      absl::StatusOr<StmtPtr> body = ReadStmt(f.body(), at + ".body", depth + 1);
      scope_.pop_back();
      if (!body.ok()) return body.status();
      out.body = *std::move(body);
      return MakeStmt(std::move(out));
    }
    case v1::Program::Stmt::kAlloc: {
      MT_ASSIGN_OR_RETURN(Alloc a, ReadAlloc(m.alloc(), path + ".alloc"));
      MT_RETURN_IF_ERROR(CheckBuffer(a.buffer, path + ".alloc"));
      return MakeStmt(std::move(a));
    }
    case v1::Program::Stmt::kTransfer: {
      MT_ASSIGN_OR_RETURN(Transfer t, ReadTransfer(m.transfer(), path + ".transfer"));
      return MakeStmt(std::move(t));
    }
    case v1::Program::Stmt::kCompute: {
      MT_ASSIGN_OR_RETURN(Compute c, ReadCompute(m.compute(), path + ".compute"));
      return MakeStmt(std::move(c));
    }
    case v1::Program::Stmt::kReduce: {
      MT_ASSIGN_OR_RETURN(Reduce r, ReadReduce(m.reduce(), path + ".reduce"));
      return MakeStmt(std::move(r));
    }
    case v1::Program::Stmt::NODE_NOT_SET:
      break;
  }
  return Bad(path, "a statement of no kind (block, for_loop, alloc, transfer, compute, reduce)");
}

absl::StatusOr<Program> Reader::Read(const v1::Program& m) {
  const std::string path = "program";
  if (m.axis_names_size() < 1 || m.axis_names_size() > 3 ||
      m.axis_sizes_size() != m.axis_names_size()) {
    return Bad(path, absl::StrCat("a mesh of ", m.axis_names_size(), " axis names and ",
                                  m.axis_sizes_size(), " sizes (one to three axes)"));
  }
  int64_t ranks = 1;
  for (int i = 0; i < m.axis_names_size(); ++i) {
    const std::string& name = m.axis_names(i);
    if (name.empty() || std::count(m.axis_names().begin(), m.axis_names().end(), name) > 1) {
      return Bad(path, absl::StrCat("axis name \"", name, "\" is empty or used twice"));
    }
    if (m.axis_sizes(i) < 1 || m.axis_sizes(i) > ir::kMaxRanks) {
      return Bad(path, absl::StrCat("axis ", name, " has size ", m.axis_sizes(i)));
    }
    ranks *= m.axis_sizes(i);
    if (ranks > ir::kMaxRanks) {
      return Bad(path, absl::StrCat("a mesh of more than ", ir::kMaxRanks, " ranks"));
    }
    p_.axis_names.push_back(name);
    p_.axis_sizes.push_back(m.axis_sizes(i));
  }
  scope_ = p_.axis_names;
  if (m.dtype_bytes() != 4 && m.dtype_bytes() != 8) {
    return Bad(path, absl::StrCat("dtype_bytes is ", m.dtype_bytes(), ", not 4 or 8"));
  }
  p_.dtype_bytes = m.dtype_bytes();
  p_.accumulate = m.accumulate();
  p_.result_on_layer = m.result_on_layer();
  if (m.tensors_size() < 2) return Bad(path, "a program of fewer than two tensors");
  int outputs = 0;
  for (int i = 0; i < m.tensors_size(); ++i) {
    MT_ASSIGN_OR_RETURN(TensorInfo t,
                        ReadTensor(m.tensors(i), absl::StrCat(path, ".tensors[", i, "]")));
    if (p_.Tensor(t.name) != nullptr) {
      return Bad(path, absl::StrCat("tensor ", t.name, " is named twice"));
    }
    outputs += t.is_output ? 1 : 0;
    p_.tensors.push_back(std::move(t));
  }
  if (outputs != 1 || !p_.tensors[0].is_output) {
    return Bad(path, absl::StrCat("the first tensor must be the output, and only it (", outputs,
                                  " outputs)"));
  }
  for (int i = 0; i < m.buffers_size(); ++i) {
    const std::string at = absl::StrCat(path, ".buffers[", i, "]");
    MT_ASSIGN_OR_RETURN(Alloc a, ReadAlloc(m.buffers(i), at));
    if (p_.Tensor(a.buffer) != nullptr || CheckBuffer(a.buffer, at).ok()) {
      return Bad(at, absl::StrCat("buffer ", a.buffer, " is named twice or like a tensor"));
    }
    p_.buffers.push_back(std::move(a));
  }
  MT_ASSIGN_OR_RETURN(p_.body, ReadStmt(m.body(), path + ".body", 0));
  if (computes_ != 1) return Bad(path, "no kernel call (a program has one)");
  return std::move(p_);
}

}  // namespace

v1::Program ToProto(const Program& p) {
  v1::Program m;
  for (const std::string& a : p.axis_names) m.add_axis_names(a);
  for (int64_t s : p.axis_sizes) m.add_axis_sizes(s);
  m.set_dtype_bytes(p.dtype_bytes);
  m.set_accumulate(p.accumulate);
  m.set_result_on_layer(p.result_on_layer);
  for (const TensorInfo& t : p.tensors) {
    v1::Program::Tensor* out = m.add_tensors();
    out->set_name(t.name);
    for (const std::string& d : t.dims) out->add_dims(d);
    for (int64_t n : t.shape) out->add_shape(n);
    for (int64_t n : t.local_shape) out->add_local_shape(n);
    for (const DimLayout& l : t.layout) {
      v1::Program::DimLayout* dl = out->add_layout();
      for (const auto& [size, index] : l.blocks) {
        v1::Program::DimLayout::Block* b = dl->add_blocks();
        b->set_size(size);
        ExprTo(index, b->mutable_index());
      }
    }
    out->set_is_output(t.is_output);
    if (t.given.kind != ir::GivenLayout::Kind::kBlock) out->set_given(t.given.ToString());
  }
  for (const Alloc& a : p.buffers) AllocTo(a, m.add_buffers());
  StmtTo(p.body, m.mutable_body());
  return m;
}

absl::StatusOr<Program> FromProto(const v1::Program& m) { return Reader().Read(m); }

v1::Program::Expr::Op OpToProto(Expr::Op op) {
  for (const OpRow& row : kOps) {
    if (row.op == op) return row.proto;
  }
  MT_CHECK(false);  // an operator missing from kOps
  return PExpr::OP_UNSPECIFIED;
}

absl::StatusOr<Expr::Op> OpFromProto(v1::Program::Expr::Op op) {
  for (const OpRow& row : kOps) {
    if (row.proto == op) return row.op;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("op ", static_cast<int>(op), " is not an operator"));
}

v1::Program::CommPattern::Kind PatternKindToProto(PatternKind kind) {
  for (const KindRow& row : kKinds) {
    if (row.kind == kind) return row.proto;
  }
  MT_CHECK(false);  // a pattern kind missing from kKinds
  return PPattern::KIND_UNSPECIFIED;
}

absl::StatusOr<PatternKind> PatternKindFromProto(v1::Program::CommPattern::Kind kind) {
  for (const KindRow& row : kKinds) {
    if (row.proto == kind) return row.kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kind ", static_cast<int>(kind), " is not a communication pattern"));
}

}  // namespace meshtune::codegen
