#include "ir/mesh.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "ir/scanner.h"

namespace meshtune::ir {

int64_t Mesh::Ranks() const {
  int64_t r = 1;
  for (const MeshAxis& a : axes) r *= a.size;
  return r;
}

int Mesh::AxisIndex(absl::string_view name) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Mesh::AxisNames() const {
  std::vector<std::string> names;
  for (const MeshAxis& a : axes) names.push_back(a.name);
  return base::ExcerptList(names);
}

std::string Mesh::ToString() const {
  std::vector<std::string> parts;
  for (const MeshAxis& a : axes) parts.push_back(absl::StrCat(a.name, "=", a.size));
  return absl::StrJoin(parts, ",");
}

namespace {

// Why axis `name` of `size` cannot follow `mesh`'s axes (which hold `ranks` ranks), or "".
std::string AxisProblem(const Mesh& mesh, const std::string& name, int64_t size) {
  if (mesh.AxisIndex(name) >= 0)
    return absl::StrCat("mesh axis ", base::Excerpt(name), " is given twice");
  if (static_cast<int>(mesh.axes.size()) == kMaxMeshAxes) {
    return absl::StrCat("mesh axis ", base::Excerpt(name), " is one too many: a mesh has 1 to ",
                        kMaxMeshAxes, " axes");
  }
  if (size < 1) {
    return absl::StrCat("mesh axis ", base::Excerpt(name), " has size ", size,
                        "; sizes must be at least 1");
  }
  const int64_t ranks = mesh.Ranks();
  if (size > kMaxRanks || ranks * size > kMaxRanks)
    return absl::StrCat("mesh axis ", base::Excerpt(name), "=", size, " makes the mesh over ",
                        kMaxRanks, " ranks");
  return "";
}

}  // namespace

absl::StatusOr<Mesh> MeshOf(const std::vector<MeshAxis>& axes) {
  if (axes.empty()) return absl::InvalidArgumentError("no mesh axes given (expected e.g. x=8,y=8)");
  Mesh mesh;
  // As long as its text may be (ParseMesh's limit).
  size_t bytes = 0;
  for (const MeshAxis& a : axes) bytes += a.name.size() + absl::StrCat("=", a.size, ",").size();
  if (bytes - 1 > kMaxMeshTextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh is ", bytes - 1, " bytes long; the limit is ", kMaxMeshTextBytes, " bytes"));
  }
  for (const MeshAxis& a : axes) {
    if (!IsIdentifier(a.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis name ", base::Excerpt(a.name), " is not an identifier (e.g. x)"));
    }
    if (std::string why = AxisProblem(mesh, a.name, a.size); !why.empty())
      return absl::InvalidArgumentError(why);
    mesh.axes.push_back(a);
  }
  return mesh;
}

absl::StatusOr<Mesh> ParseMesh(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text, "mesh", kMaxMeshTextBytes);
  if (!tokens.ok()) return tokens.status();
  TokenStream ts(std::move(*tokens), "mesh");
  Mesh mesh;
  if (ts.AtEnd()) return ts.ErrorAt(ts.Peek(), "no mesh axes given (expected e.g. x=8,y=8)");
  while (!ts.AtEnd()) {
    const Token name_tok = ts.Peek();
    absl::StatusOr<std::string> name = ts.ExpectIdent("a mesh axis name");
    if (!name.ok()) return name.status();
    if (std::string why = AxisProblem(mesh, *name, 1); !why.empty())
      return ts.ErrorAt(name_tok, why);
    if (absl::Status s = ts.Expect("="); !s.ok()) return s;
    const Token size_tok = ts.Peek();
    absl::StatusOr<int64_t> size =
        ts.ExpectInt(absl::StrCat("size of mesh axis ", base::Excerpt(*name)));
    if (!size.ok()) return size.status();
    if (std::string why = AxisProblem(mesh, *name, *size); !why.empty())
      return ts.ErrorAt(size_tok, why);
    mesh.axes.push_back({*name, *size});
    ts.Accept(",");
  }
  return mesh;
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    return absl::InvalidArgumentError(absl::StrCat("memory size '", base::Excerpt(text),
                                                   "' does not start with a number (e.g. 2GiB)"));
  }
  absl::StatusOr<int64_t> n = ParseInt64(text.substr(0, digits), "memory size");
  if (!n.ok()) return n.status();
  const absl::string_view unit = text.substr(digits);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K" || unit == "KiB" || unit == "KB") {
    shift = 10;
  } else if (unit == "M" || unit == "MiB" || unit == "MB") {
    shift = 20;
  } else if (unit == "G" || unit == "GiB" || unit == "GB") {
    shift = 30;
  } else if (unit == "T" || unit == "TiB" || unit == "TB") {
    shift = 40;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown unit '", base::Excerpt(unit),
                                                   "' in memory size '", base::Excerpt(text),
                                                   "' (use B, KiB, MiB, GiB or TiB)"));
  }
  if (*n == 0)
    return absl::InvalidArgumentError(
        absl::StrCat("memory size '", base::Excerpt(text), "' is zero"));
  if (*n > (int64_t{1} << (62 - shift))) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory size '", base::Excerpt(text), "' is too large"));
  }
  return *n << shift;
}

}  // namespace meshtune::ir
