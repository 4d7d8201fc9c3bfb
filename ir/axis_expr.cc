#include "ir/axis_expr.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"

namespace meshtune::ir {

namespace {

std::string Body(const AxisExpr& e) {
  std::string s;
  for (const auto& [axis, c] : e.terms) {
    if (c < 0) {
      s += "-";
    } else if (!s.empty()) {
      s += "+";
    }
    if (c != 1 && c != -1) absl::StrAppend(&s, c < 0 ? -c : c, "*");
    s += axis;
  }
  if (e.constant != 0 || s.empty()) {
    if (e.constant >= 0 && !s.empty()) s += "+";
    absl::StrAppend(&s, e.constant);
  }
  return s;
}

struct Linear {
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t constant = 0;
  bool IsConstant() const { return terms.empty(); }
  void Add(const Linear& o, int64_t sign) {
    for (const auto& [axis, c] : o.terms) {
      auto it =
          std::find_if(terms.begin(), terms.end(), [&](const auto& t) { return t.first == axis; });
      if (it == terms.end()) {
        terms.emplace_back(axis, sign * c);
      } else {
        it->second += sign * c;
      }
    }
    constant += sign * o.constant;
    terms.erase(
        std::remove_if(terms.begin(), terms.end(), [](const auto& t) { return t.second == 0; }),
        terms.end());
  }
  void Scale(int64_t k) {
    for (auto& t : terms) t.second *= k;
    constant *= k;
  }
};

constexpr int64_t kMaxCoefficient = 1 << 20;

absl::StatusOr<Linear> ParseSum(TokenStream& ts, int depth, bool* single_factor);

absl::StatusOr<Linear> ParseFactor(TokenStream& ts, int depth) {
  const Token t = ts.Peek();
  if (t.kind == Token::kInt) {
    absl::StatusOr<int64_t> v = ts.ExpectInt("a coefficient");
    if (!v.ok()) return v.status();
    if (*v > kMaxCoefficient) return ts.ErrorAt(t, absl::StrCat("constant ", *v, " is too large"));
    Linear l;
    l.constant = *v;
    return l;
  }
  if (t.kind == Token::kIdent) {
    ts.Next();
    Linear l;
    l.terms.emplace_back(t.text, 1);
    return l;
  }
  if (t.kind == Token::kPunct && t.text == "(") {
    if (depth > 8) return ts.ErrorAt(t, "shard target nests parentheses too deeply");
    ts.Next();
    bool single = false;
    absl::StatusOr<Linear> inner = ParseSum(ts, depth + 1, &single);
    if (!inner.ok()) return inner.status();
    if (!ts.Accept(")")) {
      return ts.ErrorAt(
          ts.Peek().kind == Token::kEnd ? t : ts.Peek(),
          ts.Peek().kind == Token::kEnd
              ? "unbalanced '(' in shard target"
              : absl::StrCat("expected ')' in shard target but found ", Describe(ts.Peek())));
    }
    return inner;
  }
  return ts.ErrorAt(
      t,
      absl::StrCat("expected a mesh axis, integer or '(' in shard target but found ", Describe(t)));
}

absl::StatusOr<Linear> ParseTerm(TokenStream& ts, int depth) {
  const Token start = ts.Peek();
  absl::StatusOr<Linear> acc = ParseFactor(ts, depth);
  if (!acc.ok()) return acc.status();
  while (ts.Accept("*")) {
    absl::StatusOr<Linear> f = ParseFactor(ts, depth);
    if (!f.ok()) return f.status();
    if (acc->IsConstant()) {
      f->Scale(acc->constant);
      acc = *f;
    } else if (f->IsConstant()) {
      acc->Scale(f->constant);
    } else {
      return ts.ErrorAt(start, "shard target is not affine: it multiplies two mesh axes");
    }
  }
  return acc;
}

absl::StatusOr<Linear> ParseSum(TokenStream& ts, int depth, bool* single_factor) {
  int64_t sign = 1;
  if (ts.Accept("-")) sign = -1;
  const Token first = ts.Peek();
  absl::StatusOr<Linear> acc = ParseTerm(ts, depth);
  if (!acc.ok()) return acc.status();
  acc->Scale(sign);
  *single_factor = sign == 1;
  (void)first;
  while (true) {
    if (ts.Accept("+")) {
      sign = 1;
    } else if (ts.Accept("-")) {
      sign = -1;
    } else {
      break;
    }
    *single_factor = false;
    absl::StatusOr<Linear> t = ParseTerm(ts, depth);
    if (!t.ok()) return t.status();
    acc->Add(*t, sign);
  }
  return acc;
}

}  // namespace

std::string AxisExpr::ToString() const {
  const std::string body = Body(*this);
  const bool plain = terms.size() == 1 && terms[0].second == 1 && constant == 0;
  if (modulus != 0) {
    return plain ? absl::StrCat(body, "%", modulus) : absl::StrCat("(", body, ")%", modulus);
  }
  return plain ? body : absl::StrCat("(", body, ")");
}

int64_t AxisExpr::Evaluate(const Mesh& mesh, const std::vector<int64_t>& coords) const {
  int64_t v = constant;
  for (const auto& [axis, c] : terms) v += c * coords[mesh.AxisIndex(axis)];
  if (modulus != 0) v = ((v % modulus) + modulus) % modulus;
  return v;
}

std::pair<int64_t, int64_t> AxisExpr::Range(const Mesh& mesh) const {
  int64_t lo = constant, hi = constant;
  for (const auto& [axis, c] : terms) {
    const int64_t top = c * (mesh.axes[mesh.AxisIndex(axis)].size - 1);
    lo += std::min<int64_t>(0, top);
    hi += std::max<int64_t>(0, top);
  }
  return {lo, hi};
}

absl::StatusOr<AxisExpr> ParseAxisExpr(TokenStream& ts) {
  const Token start = ts.Peek();
  bool single = false;
  absl::StatusOr<Linear> l = ParseSum(ts, 0, &single);
  if (!l.ok()) return l.status();
  AxisExpr e;
  e.terms = l->terms;
  e.constant = l->constant;
  const Token mod = ts.Peek();
  if (ts.Accept("%")) {
    if (!single) {
      return ts.ErrorAt(mod, "'%' applies to the whole shard target: write it as (x+y)%8");
    }
    const Token m = ts.Peek();
    absl::StatusOr<int64_t> v = ts.ExpectInt("a modulus");
    if (!v.ok()) return v.status();
    if (*v < 1 || *v > kMaxCoefficient) {
      return ts.ErrorAt(m,
                        absl::StrCat("modulus ", *v, " must be between 1 and ", kMaxCoefficient));
    }
    e.modulus = *v;
  }
  if (e.terms.empty()) {
    return ts.ErrorAt(start, "shard target names no mesh axis");
  }
  return e;
}

absl::Status CheckAxes(const AxisExpr& e, const Mesh& mesh) {
  for (const auto& [axis, c] : e.terms) {
    if (mesh.AxisIndex(axis) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown mesh axis ", base::Excerpt(axis), " in shard target ",
                       base::Excerpt(e.ToString()), " (mesh axes: ", mesh.AxisNames(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace meshtune::ir
