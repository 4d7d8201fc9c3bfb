#include "ir/layout.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/excerpt.h"

namespace meshtune::ir {

namespace {

constexpr int64_t kMaxBlock = 2147483647;  // ScaLAPACK's descriptors hold ints

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Row-major offset of `index` in `shape`.
int64_t RowMajor(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + index[d];
  return offset;
}

absl::Status BadSpec(absl::string_view spec) {
  return absl::InvalidArgumentError(
      absl::StrCat("layout '", base::Excerpt(spec),
                   "' is not block, cyclic(MB,NB) (MB, NB from 1 to 2147483647), replicated, "
                   "root or grid(AXIS or *,...)"));
}

}  // namespace

std::string GivenLayout::ToString() const {
  switch (kind) {
    case Kind::kBlock:
      return "block";
    case Kind::kCyclic:
      return absl::StrCat("cyclic(", mb, ",", nb, ")");
    case Kind::kReplicated:
      return "replicated";
    case Kind::kRoot:
      return "root";
    case Kind::kGrid:
      return absl::StrCat("grid(", absl::StrJoin(axes, ","), ")");
  }
  return "";
}

bool GivenLayout::KeepsCopiesAlong(const std::string& axis) const {
  if (kind == Kind::kReplicated) return true;
  return kind == Kind::kGrid && std::find(axes.begin(), axes.end(), axis) == axes.end();
}

absl::StatusOr<GivenLayout> ParseLayout(absl::string_view spec) {
  GivenLayout out;
  if (spec == "block") return out;
  if (spec == "replicated" || spec == "root") {
    out.kind = spec == "root" ? GivenLayout::Kind::kRoot : GivenLayout::Kind::kReplicated;
    return out;
  }
  absl::string_view args = spec;
  if (absl::ConsumePrefix(&args, "grid(")) {
    if (!absl::ConsumeSuffix(&args, ")")) return BadSpec(spec);
    out.kind = GivenLayout::Kind::kGrid;
    for (absl::string_view a : absl::StrSplit(args, ',')) {
      const bool name = !a.empty() &&
                        (std::isalpha(static_cast<unsigned char>(a[0])) || a[0] == '_') &&
                        std::all_of(a.begin(), a.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                        });
      if (!(a == "*" || name) ||
          (a != "*" && std::find(out.axes.begin(), out.axes.end(), a) != out.axes.end()))
        return BadSpec(spec);
      out.axes.emplace_back(a);
    }
    return out;
  }
  if (!absl::ConsumePrefix(&args, "cyclic(") || !absl::ConsumeSuffix(&args, ")"))
    return BadSpec(spec);
  const std::vector<absl::string_view> sizes = absl::StrSplit(args, ',');
  if (sizes.size() != 2) return BadSpec(spec);
  int64_t mb = 0, nb = 0;
  if (!absl::SimpleAtoi(sizes[0], &mb) || !absl::SimpleAtoi(sizes[1], &nb) || mb < 1 || nb < 1 ||
      mb > kMaxBlock || nb > kMaxBlock)
    return BadSpec(spec);
  out.kind = GivenLayout::Kind::kCyclic;
  out.mb = mb;
  out.nb = nb;
  return out;
}

absl::Status SplitLayoutFlag(const std::string& flag, std::string* tensor, std::string* spec) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--layout '", base::Excerpt(flag),
                                                   "' is not TENSOR=SPEC (e.g. A=cyclic(64,64))"));
  }
  *tensor = flag.substr(0, eq);
  *spec = flag.substr(eq + 1);
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, GivenLayout>> ParseLayoutFlags(
    const std::vector<std::string>& flags, const Problem& problem) {
  const std::vector<std::string> tensors = problem.Tensors();
  std::map<std::string, GivenLayout> out;
  for (const std::string& flag : flags) {
    std::string tensor, spec;
    if (absl::Status s = SplitLayoutFlag(flag, &tensor, &spec); !s.ok()) return s;
    if (std::find(tensors.begin(), tensors.end(), tensor) == tensors.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--layout names tensor '", base::Excerpt(tensor), "', which ", problem.ToString(),
          " does not have (it has ", absl::StrJoin(tensors, ", "), ")"));
    }
    if (out.count(tensor) > 0) {
      return absl::InvalidArgumentError(absl::StrCat("--layout gives tensor ", tensor, " twice"));
    }
    absl::StatusOr<GivenLayout> layout = ParseLayout(spec);
    if (!layout.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--layout ", tensor, ": ", layout.status().message()));
    }
    if (layout->kind != GivenLayout::Kind::kBlock && problem.Shape(tensor).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--layout ", tensor, "=", layout->ToString(),
                                                     ": ", tensor,
                                                     " is a scalar, kept whole on every rank"));
    }
    if (layout->kind == GivenLayout::Kind::kCyclic && problem.Shape(tensor).size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--layout ", tensor, "=", layout->ToString(), ": cyclic lays out a matrix, and ", tensor,
          " has ", problem.Shape(tensor).size(), " dims"));
    }
    if (layout->kind == GivenLayout::Kind::kGrid &&
        layout->axes.size() != problem.Shape(tensor).size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--layout ", tensor, "=", layout->ToString(), ": names ", layout->axes.size(),
          " axes for the ", problem.Shape(tensor).size(), " dims of ", tensor));
    }
    out[tensor] = *layout;
  }
  return out;
}

absl::Status CheckLayoutAxes(const Problem& problem, const Mesh& mesh) {
  for (const auto& [tensor, layout] : problem.layouts) {
    for (const std::string& a : layout.axes) {
      if (a == "*") continue;
      if (std::none_of(mesh.axes.begin(), mesh.axes.end(),
                       [&](const MeshAxis& m) { return m.name == a; })) {
        return absl::InvalidArgumentError(absl::StrCat("--layout ", tensor, "=", layout.ToString(),
                                                       ": the mesh ", mesh.ToString(),
                                                       " has no axis ", a));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SetLayouts(const std::vector<std::string>& flags, Problem* problem) {
  absl::StatusOr<std::map<std::string, GivenLayout>> given = ParseLayoutFlags(flags, *problem);
  if (!given.ok()) return given.status();
  problem->layouts.clear();
  for (const auto& [tensor, layout] : *given) {
    if (layout.kind != GivenLayout::Kind::kBlock) problem->layouts[tensor] = layout;
  }
  return absl::OkStatus();
}

absl::StatusOr<Problem> InPlaceForm(const Problem& problem, const Mesh& mesh) {
  const auto refuse = [](const std::string& why) {
    return absl::FailedPreconditionError("no in-place form: " + why);
  };
  if (mesh.axes.size() > 2) {
    return refuse(absl::StrCat("the mesh ", mesh.ToString(),
                               " has more than two axes (cyclic uses the first two)"));
  }
  const int64_t p = mesh.axes.empty() ? 1 : mesh.axes[0].size;
  const int64_t q = mesh.axes.size() > 1 ? mesh.axes[1].size : 1;
  struct Deal {
    int64_t block, procs;
    std::string where;
  };
  std::map<std::string, Deal> deals;  // per index: how the layouts deal it
  for (const std::string& t : problem.Tensors()) {
    const GivenLayout* layout = problem.LayoutOf(t);
    if (layout == nullptr || layout->kind != GivenLayout::Kind::kCyclic) {
      return refuse(absl::StrCat(t, " is not given in a cyclic layout"));
    }
    const std::vector<std::string>& dims = problem.FirstAccess(t)->indices;
    const std::pair<int64_t, int64_t> dealt[2] = {{layout->mb, p}, {layout->nb, q}};
    for (size_t d = 0; d < 2; ++d) {
      const int64_t extent = problem.extents.at(dims[d]);
      // Over one process any block size keeps the order: the identity, as one block.
      const int64_t block = dealt[d].second == 1 ? extent : dealt[d].first;
      const Deal deal{block, dealt[d].second,
                      absl::StrCat(t, "=", layout->ToString(), " (", dims[d], " in blocks of ",
                                   block, " over ", dealt[d].second, ")")};
      if (extent % (deal.block * deal.procs) != 0) {
        return refuse(absl::StrCat(dims[d], "=", extent, " is not a multiple of ",
                                   deal.block * deal.procs, " in ", deal.where));
      }
      const auto [it, added] = deals.emplace(dims[d], deal);
      if (!added && (it->second.block != deal.block || it->second.procs != deal.procs)) {
        return refuse(absl::StrCat("index ", dims[d], " is dealt differently in ", it->second.where,
                                   " and ", deal.where));
      }
    }
  }
  Problem reversed = problem;
  std::reverse(reversed.output.indices.begin(), reversed.output.indices.end());
  for (TensorAccess& a : reversed.operands) std::reverse(a.indices.begin(), a.indices.end());
  // A product of two keeps the matmul form: the operand whose rows are the output's first.
  if (reversed.combine == Problem::Combine::kProduct && reversed.operands.size() == 2 &&
      !reversed.output.indices.empty() && !reversed.operands[1].indices.empty() &&
      reversed.operands[1].indices[0] == reversed.output.indices[0] &&
      reversed.operands[0].indices[0] != reversed.output.indices[0])
    std::swap(reversed.operands[0], reversed.operands[1]);
  // The same indices, extents and dtype: only the orders changed, so it stays a valid problem.
  absl::StatusOr<Problem> out = std::move(reversed);
  out->layouts.clear();
  out->result_on_layer = false;
  const std::string x = mesh.axes.empty() ? "*" : mesh.axes[0].name;
  const std::string y = mesh.axes.size() > 1 ? mesh.axes[1].name : "*";
  for (const std::string& t : out->Tensors())
    out->layouts[t] = GivenLayout{GivenLayout::Kind::kGrid, 0, 0, {y, x}};
  return out;
}

int64_t Numroc(int64_t n, int64_t nb, int64_t iproc, int64_t nprocs) {
  const int64_t blocks = n / nb;          // whole blocks
  int64_t out = (blocks / nprocs) * nb;   // every process's full rounds
  const int64_t extra = blocks % nprocs;  // processes with one more whole block
  if (iproc < extra) {
    out += nb;
  } else if (iproc == extra) {
    out += n % nb;  // the last, partial block
  }
  return out;
}

Placement::Placement(GivenLayout layout, std::vector<int64_t> shape, const Mesh& mesh)
    : layout_(std::move(layout)), shape_(std::move(shape)) {
  if (!mesh.axes.empty()) p_ = mesh.axes[0].size;
  if (mesh.axes.size() > 1) q_ = mesh.axes[1].size;
  for (size_t d = 0; d < layout_.axes.size(); ++d) {
    int axis = -1;
    for (size_t a = 0; a < mesh.axes.size(); ++a) {
      if (mesh.axes[a].name == layout_.axes[d]) axis = static_cast<int>(a);
    }
    const int64_t parts = axis < 0 ? 1 : mesh.axes[static_cast<size_t>(axis)].size;
    axis_.push_back(axis);
    parts_.push_back(parts);
    block_.push_back((shape_[d] + parts - 1) / parts);
  }
}

void Placement::GridBox(const std::vector<int64_t>& coords, std::vector<int64_t>* start,
                        std::vector<int64_t>* extent) const {
  start->assign(shape_.size(), 0);
  extent->assign(shape_.size(), 0);
  for (size_t d = 0; d < shape_.size(); ++d) {
    const int64_t c = axis_[d] < 0 ? 0 : coords[static_cast<size_t>(axis_[d])];
    (*start)[d] = std::min(shape_[d], c * block_[d]);
    (*extent)[d] = std::min(shape_[d], (*start)[d] + block_[d]) - (*start)[d];
  }
}

int64_t Placement::LocalElements(const std::vector<int64_t>& coords) const {
  switch (layout_.kind) {
    case GivenLayout::Kind::kCyclic: {
      for (size_t a = 2; a < coords.size(); ++a) {
        if (coords[a] != 0) return 0;
      }
      const int64_t p = coords.empty() ? 0 : coords[0], q = coords.size() > 1 ? coords[1] : 0;
      return Numroc(shape_[0], layout_.mb, p, p_) * Numroc(shape_[1], layout_.nb, q, q_);
    }
    case GivenLayout::Kind::kRoot:
      for (int64_t c : coords) {
        if (c != 0) return 0;
      }
      return Product(shape_);
    case GivenLayout::Kind::kGrid: {
      std::vector<int64_t> start, extent;
      GridBox(coords, &start, &extent);
      return Product(extent);
    }
    case GivenLayout::Kind::kReplicated:
    case GivenLayout::Kind::kBlock:
      return Product(shape_);
  }
  return 0;
}

bool Placement::Holds(const std::vector<int64_t>& coords, const std::vector<int64_t>& index) const {
  switch (layout_.kind) {
    case GivenLayout::Kind::kCyclic: {
      for (size_t a = 2; a < coords.size(); ++a) {
        if (coords[a] != 0) return false;
      }
      const int64_t p = coords.empty() ? 0 : coords[0], q = coords.size() > 1 ? coords[1] : 0;
      return (index[0] / layout_.mb) % p_ == p && (index[1] / layout_.nb) % q_ == q;
    }
    case GivenLayout::Kind::kRoot:
      return std::all_of(coords.begin(), coords.end(), [](int64_t c) { return c == 0; });
    case GivenLayout::Kind::kGrid: {
      std::vector<int64_t> start, extent;
      GridBox(coords, &start, &extent);
      for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] < start[d] || index[d] >= start[d] + extent[d]) return false;
      }
      return true;
    }
    case GivenLayout::Kind::kReplicated:
    case GivenLayout::Kind::kBlock:
      return true;
  }
  return false;
}

int64_t Placement::LocalOffset(const std::vector<int64_t>& index) const {
  if (layout_.kind == GivenLayout::Kind::kGrid) {
    std::vector<int64_t> local(index.size()), extent(index.size());
    for (size_t d = 0; d < index.size(); ++d) {
      const int64_t start = (index[d] / block_[d]) * block_[d];
      local[d] = index[d] - start;
      extent[d] = std::min(shape_[d], start + block_[d]) - start;
    }
    return RowMajor(extent, local);
  }
  if (layout_.kind != GivenLayout::Kind::kCyclic) return RowMajor(shape_, index);
  const int64_t mb = layout_.mb, nb = layout_.nb;
  const int64_t p = (index[0] / mb) % p_;
  const int64_t row = (index[0] / (mb * p_)) * mb + index[0] % mb;
  const int64_t col = (index[1] / (nb * q_)) * nb + index[1] % nb;
  const int64_t lld = std::max<int64_t>(1, Numroc(shape_[0], mb, p, p_));
  return row + col * lld;
}

}  // namespace meshtune::ir
