// Expr: the integer expressions of a lowered Program.
//
// Quasi-affine in loop variables and mesh coordinates: constants, variables, +, -, *,
// floor division and non-negative modulo by constants, min/max, and comparisons/select
// for the rare guarded piece. Immutable and shared; thread-safe to read.
#ifndef MESHTUNE_CODEGEN_EXPR_H_
#define MESHTUNE_CODEGEN_EXPR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace meshtune::codegen {

class Expr {
 public:
  enum class Op {
    kConst,
    kVar,
    kAdd,
    kSub,
    kMul,
    kFloorDiv,
    kMod,
    kNeg,
    kMin,
    kMax,
    kEq,
    kLe,
    kLt,
    kGe,
    kGt,
    kAnd,
    kOr,
    kSelect
  };

  Expr() : Expr(Const(0)) {}
  static Expr Const(int64_t v);
  static Expr Var(std::string name);
  static Expr Make(Op op, std::vector<Expr> args);
  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);

  Op op() const { return node_->op; }
  int64_t value() const { return node_->value; }
  const std::string& name() const { return node_->name; }
  const std::vector<Expr>& args() const { return node_->args; }
  bool IsConst() const { return op() == Op::kConst; }

  // Value with variables looked up by `lookup`; floor division and mod round toward
  // negative infinity / return non-negative results (as isl does).
  int64_t Eval(const std::function<int64_t(const std::string&)>& lookup) const;
  // C-like text ("(y + ko) % 8", "floord(k, 256)" written as "(k) / 256" only for
  // non-negative operands is not assumed: floordiv prints as floord(a, b)).
  std::string ToString() const;
  // C-like text with every variable renamed by `rename`.
  std::string ToString(const std::function<std::string(const std::string&)>& rename) const;
  // Python-like text for pseudo-code: "//" and "%" (Python's floor semantics match).
  std::string ToPython() const;
  // Every variable name used.
  void CollectVars(std::vector<std::string>* out) const;
  // The expression with variable `var` replaced by `with` everywhere (constants folded as
  // Make folds them), e.g. a prefetched transfer's source at the next step, ko -> ko + 1.
  Expr Substitute(const std::string& var, const Expr& with) const;

 private:
  struct Node {
    Op op;
    int64_t value = 0;
    std::string name;
    std::vector<Expr> args;
  };
  explicit Expr(std::shared_ptr<const Node> n) : node_(std::move(n)) {}
  std::shared_ptr<const Node> node_;
};

// Floor division and non-negative remainder as isl defines them (b > 0).
int64_t FloorDiv(int64_t a, int64_t b);
int64_t FloorMod(int64_t a, int64_t b);

// The one table of what Expr's operators compute: `op` applied to the values of its
// operands, x, y and z in order (those it does not take are ignored). + - * and unary - on
// int64_t; kFloorDiv and kMod are FloorDiv and FloorMod; comparisons, kAnd and kOr give 0
// or 1; kSelect is x ? y : z. kConst and kVar take no operands and give 0. Expr::Eval and
// the cost model's per-rank evaluation both use it (codegen/validate/validate.cc's ToPwAff is its
// isl counterpart, emit_cpp.cc's prelude its counterpart in emitted C++).
int64_t ApplyOp(Expr::Op op, int64_t x, int64_t y = 0, int64_t z = 0);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EXPR_H_
