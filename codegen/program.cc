#include "codegen/program.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/pattern.h"
#include "ir/layout.h"

namespace meshtune::codegen {

std::string CommPattern::Name() const { return PatternOf(kind).Name(); }

std::string CommPattern::ToString() const { return PatternOf(kind).Describe(*this); }

bool CommPattern::FromHolders() const { return PatternOf(kind).FromHolders(); }

int64_t Slice::Elements() const {
  int64_t n = 1;
  for (int64_t s : size) n *= s;
  return n;
}

const TensorInfo* Program::Tensor(const std::string& name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

int64_t Program::Ranks() const {
  int64_t r = 1;
  for (int64_t s : axis_sizes) r *= s;
  return r;
}

StmtPtr MakeStmt(std::variant<Block, For, Alloc, Transfer, Compute, Reduce> node) {
  return std::make_shared<const Stmt>(Stmt{std::move(node)});
}

StmtPtr WithPrefetch(const StmtPtr& s, int prefetch) {
  if (prefetch == 0) return s;
  if (const auto* x = std::get_if<Transfer>(&s->node)) {
    Transfer out = *x;
    out.prefetch = prefetch;
    return MakeStmt(std::move(out));
  }
  Reduce out = std::get<Reduce>(s->node);
  out.prefetch = prefetch;
  return MakeStmt(std::move(out));
}

const Compute* KernelCall(const Program& p) {
  std::function<const Compute*(const StmtPtr&)> find = [&](const StmtPtr& s) -> const Compute* {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) {
        if (const Compute* k = find(c)) return k;
      }
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      return find(f->body);
    } else if (const auto* c = std::get_if<Compute>(&s->node)) {
      return c;
    }
    return nullptr;
  };
  return p.body ? find(p.body) : nullptr;
}

bool IsPrefetched(const Stmt& s) {
  if (const auto* t = std::get_if<Transfer>(&s.node)) return t->prefetch != 0;
  if (const auto* r = std::get_if<Reduce>(&s.node)) return r->prefetch != 0;
  return false;
}

std::vector<const Stmt*> PrefetchedIn(const For& f) {
  std::vector<const Stmt*> out;
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c);
    } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
      if (t->prefetch != 0 && t->loop == f.var) out.push_back(s.get());
    } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
      if (r->prefetch != 0 && r->loop == f.var) out.push_back(s.get());
    }
  };
  if (f.body) walk(f.body);
  return out;
}

std::vector<int64_t> ShardStartAt(const Program& p, const TensorInfo& t,
                                  const std::vector<int64_t>& coords) {
  std::vector<int64_t> start;
  for (const DimLayout& l : t.layout) {
    int64_t s = 0;
    for (const auto& [block, index] : l.blocks) {
      s += block * index.Eval([&](const std::string& name) -> int64_t {
        for (size_t a = 0; a < p.axis_names.size(); ++a) {
          if (p.axis_names[a] == name) return coords[a];
        }
        return 0;
      });
    }
    start.push_back(s);
  }
  return start;
}

namespace {

// `p`'s mesh, and `fn(coords)` for every rank's coordinates in row-major rank order.
ir::Mesh MeshOf(const Program& p) {
  ir::Mesh mesh;
  for (size_t a = 0; a < p.axis_sizes.size(); ++a)
    mesh.axes.push_back({p.axis_names[a], p.axis_sizes[a]});
  return mesh;
}
void ForEachRank(const Program& p, const std::function<void(const std::vector<int64_t>&)>& fn) {
  std::vector<int64_t> coords(p.axis_sizes.size(), 0);
  for (int64_t r = 0; r < p.Ranks(); ++r) {
    int64_t rest = r;
    for (size_t a = coords.size(); a-- > 0;) {
      coords[a] = rest % p.axis_sizes[a];
      rest /= p.axis_sizes[a];
    }
    fn(coords);
  }
}

}  // namespace

bool InPlace(const Program& p, const TensorInfo& t) {
  if (t.given.kind != ir::GivenLayout::Kind::kGrid) return false;
  const ir::Placement placement(t.given, t.shape, MeshOf(p));
  bool same = true;
  std::vector<int64_t> start, extent;
  ForEachRank(p, [&](const std::vector<int64_t>& coords) {
    placement.GridBox(coords, &start, &extent);
    same = same && extent == t.local_shape && start == ShardStartAt(p, t, coords);
  });
  return same;
}

bool Redistributed(const Program& p, const TensorInfo& t) {
  return t.given.kind != ir::GivenLayout::Kind::kBlock && !InPlace(p, t);
}

std::vector<TransferSummary> Summarize(const Program& p) {
  std::vector<TransferSummary> out;
  // First the copies of replicated inputs (ReplicatedAxes), broadcast into their shards.
  for (const TensorInfo& t : p.tensors) {
    const std::vector<int> axes = t.is_output ? std::vector<int>{} : ReplicatedAxes(p, t);
    if (axes.empty()) continue;
    CommPattern pattern;
    pattern.kind = CommPattern::Kind::kBroadcast;
    pattern.axes = axes;
    int64_t elements = 1;
    for (int64_t e : t.local_shape) elements *= e;
    out.push_back({t.name, "copies", pattern, elements, 1, 0, 0});
  }
  // Then the redistributions from given layouts into the shards (loop "layout"), as many
  // elements as a shard holds (what a rank receives at most).
  CommPattern all;
  all.kind = CommPattern::Kind::kSendRecv;
  for (size_t a = 0; a < p.axis_sizes.size(); ++a) all.axes.push_back(static_cast<int>(a));
  for (const TensorInfo& t : p.tensors) {
    if (!Redistributed(p, t) || (t.is_output && !p.accumulate)) continue;
    int64_t elements = 1;
    for (int64_t e : t.local_shape) elements *= e;
    out.push_back({t.name, "layout", all, elements, 1, 0, 0});
  }
  // `loop`: the innermost For around `s`.
  std::function<void(const StmtPtr&, int64_t, const For*)> walk = [&](const StmtPtr& s,
                                                                      int64_t times,
                                                                      const For* loop) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c, times, loop);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      walk(f->body, times * f->extent, f);
    } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
      out.push_back({t->tensor, t->loop, t->pattern, t->global.Elements(), times, 0, t->prefetch});
    } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
      out.push_back({r->tensor, r->loop, r->pattern, r->global.Elements(), times, 0, r->prefetch});
      // A ring sends its buffer at every step of its loop but the last (and then with hop).
      const StepCalls steps = PatternOf(r->pattern.kind).Reduce(*r);
      if (ShapeOf(steps) == StepShape::kReduceRing && loop != nullptr && loop->var == r->loop) {
        const int64_t sends = times / loop->extent *
                              (loop->extent - 1 + static_cast<int64_t>(steps.otherwise.size()) - 1);
        out.back().bytes_per_rank = out.back().elements * sends * p.dtype_bytes;
      }
    }
  };
  if (p.body) walk(p.body, 1, nullptr);
  // Last the output's way back into its given layout (loop "layout-out"): as many elements
  // as the largest storage of a rank in that layout.
  for (const TensorInfo& t : p.tensors) {
    if (!Redistributed(p, t) || !t.is_output) continue;
    const ir::Placement placement(t.given, t.shape, MeshOf(p));
    int64_t most = 0;
    ForEachRank(p, [&](const std::vector<int64_t>& coords) {
      most = std::max(most, placement.LocalElements(coords));
    });
    out.push_back({t.name, "layout-out", all, most, 1, 0, 0});
  }
  for (TransferSummary& t : out) {
    if (PatternOf(t.pattern.kind).Sends() && t.bytes_per_rank == 0)
      t.bytes_per_rank = t.elements * t.instances * p.dtype_bytes;
    if (t.loop != "copies" && t.loop != "layout" && t.loop != "layout-out")
      t.buffer_bytes = t.elements * p.dtype_bytes * (t.prefetch != 0 ? 2 : 1);
  }
  return out;
}

namespace {

std::string SliceText(const std::string& buffer, const Slice& s) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < s.size.size(); ++d) {
    // An all-gather's source box has sizes but no single offset.
    parts.push_back(
        absl::StrCat(d < s.offset.size() ? s.offset[d].ToString() : "*", " +: ", s.size[d]));
  }
  return absl::StrCat(buffer, "[", absl::StrJoin(parts, ", "), "]");
}

void DumpStmt(const StmtPtr& s, int indent, std::string* out) {
  const std::string pad(indent * 2, ' ');
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) DumpStmt(c, indent, out);
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    absl::StrAppend(out, pad, "for ", f->var, " = ", f->lo.ToString(), " +: ", f->extent, "\n");
    DumpStmt(f->body, indent + 1, out);
  } else if (const auto* a = std::get_if<Alloc>(&s->node)) {
    absl::StrAppend(out, pad, "alloc ", a->buffer, "[", absl::StrJoin(a->shape, ", "), "]",
                    a->zero ? " zeroed" : "", "\n");
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    std::vector<std::string> src;
    for (const Expr& e : t->source) src.push_back(e.ToString());
    absl::StrAppend(out, pad, "transfer ", t->pattern.ToString(), " ", SliceText(t->tensor, t->src),
                    " from [", absl::StrJoin(src, ", "), "] -> ", t->buffer, " (global ",
                    SliceText(t->tensor, t->global), ")",
                    t->prefetch != 0 ? absl::StrCat(" prefetch=", t->prefetch) : "", "\n");
  } else if (const auto* c = std::get_if<Compute>(&s->node)) {
    std::vector<std::string> ins;
    for (const Operand& o : c->in) ins.push_back(SliceText(o.buffer, o.slice));
    // Ragged indices: "clipped m from 143*x below 1000".
    std::vector<std::string> clips;
    for (size_t i = 0; i < c->start.size(); ++i) {
      if (c->extent[i] == 0) continue;
      clips.push_back(absl::StrCat(c->tile[i].first, " from ", c->start[i].ToString(), " below ",
                                   c->extent[i]));
    }
    absl::StrAppend(out, pad, "compute ", c->kernel, " ", SliceText(c->out.buffer, c->out.slice),
                    " <- ", absl::StrJoin(ins, c->sum ? " + " : " * "),
                    clips.empty() ? "" : " clipped " + absl::StrJoin(clips, ", "), "\n");
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    absl::StrAppend(out, pad, "reduce ", r->pattern.ToString(), " ", r->buffer, " -> ",
                    SliceText(r->tensor, r->global),
                    r->prefetch != 0 ? absl::StrCat(" prefetch=", r->prefetch) : "", "\n");
  }
}

}  // namespace

std::string Dump(const Program& p) {
  std::string out;
  for (const TensorInfo& t : p.tensors) {
    absl::StrAppend(&out, "tensor ", t.name, "[", absl::StrJoin(t.shape, ", "), "] local [",
                    absl::StrJoin(t.local_shape, ", "), "]", t.is_output ? " output" : "", "\n");
  }
  if (p.body) DumpStmt(p.body, 0, &out);
  return out;
}

std::string PatternLabel(const std::string& tensor, const std::string& loop,
                         const CommPattern& pattern) {
  // A given layout's redistribution (Summarize's loops "layout" and "layout-out").
  if (loop == "layout" || loop == "layout-out") return absl::StrCat(tensor, "@", loop, " AllToAll");
  return absl::StrCat(tensor, "@", loop, " ", pattern.ToString());
}

std::string RenamePatternLabel(const std::string& label,
                               const std::function<std::string(const std::string&)>& rename) {
  const size_t at = label.find('@');
  const size_t space = label.find(' ');
  if (at == std::string::npos || space == std::string::npos || space < at) return label;
  return absl::StrCat(rename(label.substr(0, at)), "@",
                      rename(label.substr(at + 1, space - at - 1)), label.substr(space));
}

std::vector<int> ReplicatedAxes(const Program& p, const TensorInfo& t) {
  std::vector<std::string> used;
  for (const DimLayout& d : t.layout) {
    for (const auto& [block, index] : d.blocks) index.CollectVars(&used);
  }
  std::vector<int> out;
  for (size_t a = 0; a < p.axis_names.size(); ++a) {
    if (p.axis_sizes[a] > 1 && std::find(used.begin(), used.end(), p.axis_names[a]) == used.end())
      out.push_back(static_cast<int>(a));
  }
  return out;
}

std::vector<int> LayerAxes(const Program& p, const TensorInfo& t) {
  if (!t.is_output || !p.result_on_layer) return {};
  std::vector<int> out;
  for (int a : ReplicatedAxes(p, t)) {
    if (!t.given.KeepsCopiesAlong(p.axis_names[static_cast<size_t>(a)])) out.push_back(a);
  }
  return out;
}

std::vector<int> CopyAxes(const Program& p, const TensorInfo& t, bool redistributed) {
  if (t.is_output) return LayerAxes(p, t);
  return redistributed ? std::vector<int>{} : ReplicatedAxes(p, t);
}

bool OnLayer(const Program& p, const TensorInfo& t, const std::vector<int64_t>& coords) {
  for (int a : LayerAxes(p, t)) {
    if (coords[static_cast<size_t>(a)] != 0) return false;
  }
  return true;
}

namespace {

// Every coordinate of a mesh of `sizes`, row-major.
std::vector<std::vector<int64_t>> AllCoords(const std::vector<int64_t>& sizes) {
  std::vector<std::vector<int64_t>> all(1);
  for (int64_t size : sizes) {
    std::vector<std::vector<int64_t>> next;
    for (const std::vector<int64_t>& c : all) {
      for (int64_t i = 0; i < size; ++i) {
        next.push_back(c);
        next.back().push_back(i);
      }
    }
    all = std::move(next);
  }
  return all;
}

int TensorIndex(const Program& p, const std::string& tensor) {
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (p.tensors[t].name == tensor) return static_cast<int>(t);
  }
  return -1;
}

}  // namespace

bool SameShards(const Program& a, const TensorInfo& ta, const Program& b, const TensorInfo& tb) {
  if (ta.shape != tb.shape || ta.local_shape != tb.local_shape) return false;
  for (const std::vector<int64_t>& c : AllCoords(b.axis_sizes)) {
    if (ShardStartAt(a, ta, c) != ShardStartAt(b, tb, c)) return false;
  }
  return true;
}

bool ReadInPlace(const Program& producer, const Program& consumer, const std::string& tensor) {
  const int from = TensorIndex(producer, tensor), to = TensorIndex(consumer, tensor);
  if (from < 0 || to < 0) return false;
  const TensorInfo& f = producer.tensors[from];
  for (const std::vector<int64_t>& c : AllCoords(consumer.axis_sizes)) {
    if (!OnLayer(producer, f, c)) return false;
  }
  return SameShards(producer, f, consumer, consumer.tensors[to]);
}

bool ReadsWhereItLives(const Program& home, const Program& reader, const std::string& tensor) {
  const int from = TensorIndex(home, tensor), to = TensorIndex(reader, tensor);
  if (from < 0 || to < 0) return false;
  if (home.tensors[from].is_output) return ReadInPlace(home, reader, tensor);
  return SameShards(home, home.tensors[from], reader, reader.tensors[to]);
}

}  // namespace meshtune::codegen
