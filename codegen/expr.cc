#include "codegen/expr.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace meshtune::codegen {

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

Expr Expr::Const(int64_t v) {
  auto n = std::make_shared<Node>();
  n->op = Op::kConst;
  n->value = v;
  return Expr(std::move(n));
}

Expr Expr::Var(std::string name) {
  auto n = std::make_shared<Node>();
  n->op = Op::kVar;
  n->name = std::move(name);
  return Expr(std::move(n));
}

Expr Expr::Make(Op op, std::vector<Expr> args) {
  // Fold constants; drop neutral elements.
  bool all_const = !args.empty() && op != Op::kSelect;
  for (const Expr& a : args) all_const = all_const && a.IsConst();
  auto n = std::make_shared<Node>();
  n->op = op;
  n->args = std::move(args);
  Expr e(std::move(n));
  if (all_const) return Const(e.Eval([](const std::string&) -> int64_t { return 0; }));
  const auto& a = e.args();
  if (op == Op::kAdd && a[1].IsConst() && a[1].value() == 0) return a[0];
  if (op == Op::kAdd && a[0].IsConst() && a[0].value() == 0) return a[1];
  if (op == Op::kSub && a[1].IsConst() && a[1].value() == 0) return a[0];
  if (op == Op::kMul && a[0].IsConst() && a[0].value() == 1) return a[1];
  if (op == Op::kMul && a[1].IsConst() && a[1].value() == 1) return a[0];
  if (op == Op::kMul &&
      ((a[0].IsConst() && a[0].value() == 0) || (a[1].IsConst() && a[1].value() == 0))) {
    return Const(0);
  }
  return e;
}

Expr Expr::Substitute(const std::string& var, const Expr& with) const {
  if (op() == Op::kConst) return *this;
  if (op() == Op::kVar) return name() == var ? with : *this;
  std::vector<Expr> args;
  for (const Expr& a : this->args()) args.push_back(a.Substitute(var, with));
  return Make(op(), std::move(args));
}

Expr operator+(const Expr& a, const Expr& b) { return Expr::Make(Expr::Op::kAdd, {a, b}); }
Expr operator-(const Expr& a, const Expr& b) { return Expr::Make(Expr::Op::kSub, {a, b}); }
Expr operator*(const Expr& a, const Expr& b) { return Expr::Make(Expr::Op::kMul, {a, b}); }

int64_t ApplyOp(Expr::Op op, int64_t x, int64_t y, int64_t z) {
  using Op = Expr::Op;
  switch (op) {
    case Op::kConst:
    case Op::kVar:
      return 0;
    case Op::kAdd:
      return x + y;
    case Op::kSub:
      return x - y;
    case Op::kMul:
      return x * y;
    case Op::kFloorDiv:
      return FloorDiv(x, y);
    case Op::kMod:
      return FloorMod(x, y);
    case Op::kNeg:
      return -x;
    case Op::kMin:
      return std::min(x, y);
    case Op::kMax:
      return std::max(x, y);
    case Op::kEq:
      return x == y;
    case Op::kLe:
      return x <= y;
    case Op::kLt:
      return x < y;
    case Op::kGe:
      return x >= y;
    case Op::kGt:
      return x > y;
    case Op::kAnd:
      return x && y;
    case Op::kOr:
      return x || y;
    case Op::kSelect:
      return x ? y : z;
  }
  MT_CHECK(false);
  return 0;
}

int64_t Expr::Eval(const std::function<int64_t(const std::string&)>& lookup) const {
  if (op() == Op::kConst) return value();
  if (op() == Op::kVar) return lookup(name());
  // Operators take at most 3 operands; all are evaluated (lookups have no side effects).
  int64_t v[3] = {0, 0, 0};
  const std::vector<Expr>& a = args();
  for (size_t i = 0; i < a.size() && i < 3; ++i) v[i] = a[i].Eval(lookup);
  return ApplyOp(op(), v[0], v[1], v[2]);
}

namespace {

// Binding strength: comparisons and logic 0, + and - 1, * // % 2, atoms 3.
int Level(const Expr& e, bool python) {
  using Op = Expr::Op;
  switch (e.op()) {
    case Op::kAdd:
    case Op::kSub:
      return 1;
    case Op::kMul:
      return 2;
    case Op::kFloorDiv:
    case Op::kMod:
      return python ? 2 : 3;
    case Op::kConst:
      return e.value() < 0 ? 1 : 3;
    case Op::kVar:
    case Op::kMin:
    case Op::kMax:
    case Op::kNeg:
      return 3;
    default:
      return 0;
  }
}

using Rename = std::function<std::string(const std::string&)>;

std::string Render(const Expr& e, bool python, int min_level, const Rename& rename = nullptr);

std::string Render(const Expr& e, bool python, int min_level, const Rename& rename) {
  auto Child = [&](const Expr& c, bool py, int level) { return Render(c, py, level, rename); };
  using Op = Expr::Op;
  const auto& a = e.args();
  std::string s;
  switch (e.op()) {
    case Op::kConst:
      s = absl::StrCat(e.value());
      break;
    case Op::kVar:
      s = rename ? rename(e.name()) : e.name();
      break;
    case Op::kAdd:
      if (a[1].IsConst() && a[1].value() < 0) {
        s = absl::StrCat(Child(a[0], python, 1), " - ", -a[1].value());
      } else {
        s = absl::StrCat(Child(a[0], python, 1), " + ", Child(a[1], python, 2));
      }
      break;
    case Op::kSub:
      s = absl::StrCat(Child(a[0], python, 1), " - ", Child(a[1], python, 2));
      break;
    case Op::kMul:
      s = absl::StrCat(Child(a[0], python, 2), " * ", Child(a[1], python, 3));
      break;
    case Op::kFloorDiv:
      s = python ? absl::StrCat(Child(a[0], python, 2), " // ", Child(a[1], python, 3))
                 : absl::StrCat("floord(", Render(a[0], python, 0, rename), ", ",
                                Render(a[1], python, 0, rename), ")");
      break;
    case Op::kMod:
      s = python ? absl::StrCat(Child(a[0], python, 2), " % ", Child(a[1], python, 3))
                 : absl::StrCat("floormod(", Render(a[0], python, 0, rename), ", ",
                                Render(a[1], python, 0, rename), ")");
      break;
    case Op::kNeg:
      s = absl::StrCat("-", Child(a[0], python, 3));
      break;
    case Op::kMin:
    case Op::kMax:
      s = absl::StrCat(e.op() == Op::kMin ? (python ? "min(" : "std::min<int64_t>(")
                                          : (python ? "max(" : "std::max<int64_t>("),
                       Render(a[0], python, 0, rename), ", ", Render(a[1], python, 0, rename), ")");
      break;
    case Op::kEq:
    case Op::kLe:
    case Op::kLt:
    case Op::kGe:
    case Op::kGt: {
      static const char* kOps[] = {" == ", " <= ", " < ", " >= ", " > "};
      const int i = static_cast<int>(e.op()) - static_cast<int>(Op::kEq);
      s = absl::StrCat(Child(a[0], python, 1), kOps[i], Child(a[1], python, 1));
      break;
    }
    case Op::kAnd:
    case Op::kOr:
      s = absl::StrCat(
          Child(a[0], python, 1),
          e.op() == Op::kAnd ? (python ? " and " : " && ") : (python ? " or " : " || "),
          Child(a[1], python, 1));
      break;
    case Op::kSelect:
      s = python ? absl::StrCat(Child(a[1], python, 1), " if ", Child(a[0], python, 1), " else ",
                                Child(a[2], python, 1))
                 : absl::StrCat(Child(a[0], python, 1), " ? ", Child(a[1], python, 1), " : ",
                                Child(a[2], python, 1));
      break;
  }
  return Level(e, python) < min_level ? absl::StrCat("(", s, ")") : s;
}

}  // namespace

std::string Expr::ToString() const { return Render(*this, false, 0); }
std::string Expr::ToString(const std::function<std::string(const std::string&)>& rename) const {
  return Render(*this, false, 0, rename);
}
std::string Expr::ToPython() const { return Render(*this, true, 0); }

void Expr::CollectVars(std::vector<std::string>* out) const {
  if (op() == Op::kVar) {
    if (std::find(out->begin(), out->end(), name()) == out->end()) out->push_back(name());
    return;
  }
  for (const Expr& a : args()) a.CollectVars(out);
}

}  // namespace meshtune::codegen
