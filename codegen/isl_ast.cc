#include "codegen/isl_ast.h"

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/val.h>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace meshtune::codegen {

namespace {

absl::StatusOr<Expr> ToExpr(isl_ast_expr* e) {
  switch (isl_ast_expr_get_type(e)) {
    case isl_ast_expr_int: {
      isl_val* v = isl_ast_expr_get_val(e);
      const int64_t x = isl_val_get_num_si(v);
      isl_val_free(v);
      return Expr::Const(x);
    }
    case isl_ast_expr_id: {
      isl_id* id = isl_ast_expr_get_id(e);
      std::string name = isl_id_get_name(id);
      isl_id_free(id);
      return Expr::Var(name);
    }
    case isl_ast_expr_op:
      break;
    default:
      return absl::InternalError("unexpected isl AST expression");
  }
  std::vector<Expr> args;
  const isl_size n = isl_ast_expr_op_get_n_arg(e);
  for (isl_size i = 0; i < n; ++i) {
    isl_ast_expr* a = isl_ast_expr_op_get_arg(e, i);
    absl::StatusOr<Expr> x = ToExpr(a);
    isl_ast_expr_free(a);
    if (!x.ok()) return x.status();
    args.push_back(*std::move(x));
  }
  using Op = Expr::Op;
  switch (isl_ast_expr_op_get_type(e)) {
    case isl_ast_expr_op_add:
      return Expr::Make(Op::kAdd, args);
    case isl_ast_expr_op_sub:
      return Expr::Make(Op::kSub, args);
    case isl_ast_expr_op_mul:
      return Expr::Make(Op::kMul, args);
    case isl_ast_expr_op_minus:
      return Expr::Make(Op::kNeg, args);
    case isl_ast_expr_op_fdiv_q:
    case isl_ast_expr_op_pdiv_q:
    case isl_ast_expr_op_div:
      return Expr::Make(Op::kFloorDiv, args);
    case isl_ast_expr_op_pdiv_r:
    case isl_ast_expr_op_zdiv_r:
      return Expr::Make(Op::kMod, args);
    case isl_ast_expr_op_min:
    case isl_ast_expr_op_max: {
      const Op op = isl_ast_expr_op_get_type(e) == isl_ast_expr_op_min ? Op::kMin : Op::kMax;
      Expr acc = args[0];
      for (size_t i = 1; i < args.size(); ++i) acc = Expr::Make(op, {acc, args[i]});
      return acc;
    }
    case isl_ast_expr_op_eq:
      return Expr::Make(Op::kEq, args);
    case isl_ast_expr_op_le:
      return Expr::Make(Op::kLe, args);
    case isl_ast_expr_op_lt:
      return Expr::Make(Op::kLt, args);
    case isl_ast_expr_op_ge:
      return Expr::Make(Op::kGe, args);
    case isl_ast_expr_op_gt:
      return Expr::Make(Op::kGt, args);
    case isl_ast_expr_op_and:
    case isl_ast_expr_op_and_then:
      return Expr::Make(Op::kAnd, args);
    case isl_ast_expr_op_or:
    case isl_ast_expr_op_or_else:
      return Expr::Make(Op::kOr, args);
    case isl_ast_expr_op_select:
    case isl_ast_expr_op_cond:
      return Expr::Make(Op::kSelect, args);
    default:
      return absl::InternalError("unsupported isl AST operator");
  }
}

absl::StatusOr<StmtPtr> ToStmt(
    isl_ast_node* node, const std::function<absl::StatusOr<StmtPtr>(const std::string&)>& leaf) {
  switch (isl_ast_node_get_type(node)) {
    case isl_ast_node_block: {
      isl_ast_node_list* list = isl_ast_node_block_get_children(node);
      Block b;
      const isl_size n = isl_ast_node_list_n_ast_node(list);
      for (isl_size i = 0; i < n; ++i) {
        isl_ast_node* child = isl_ast_node_list_get_ast_node(list, i);
        absl::StatusOr<StmtPtr> s = ToStmt(child, leaf);
        isl_ast_node_free(child);
        if (!s.ok()) {
          isl_ast_node_list_free(list);
          return s.status();
        }
        b.body.push_back(*std::move(s));
      }
      isl_ast_node_list_free(list);
      return MakeStmt(std::move(b));
    }
    case isl_ast_node_for: {
      isl_ast_expr* it = isl_ast_node_for_get_iterator(node);
      isl_ast_expr* init = isl_ast_node_for_get_init(node);
      isl_ast_expr* cond = isl_ast_node_for_get_cond(node);
      isl_ast_node* body = isl_ast_node_for_get_body(node);
      absl::StatusOr<Expr> var = ToExpr(it), lo = ToExpr(init), c = ToExpr(cond);
      absl::StatusOr<StmtPtr> inner = ToStmt(body, leaf);
      isl_ast_expr_free(it);
      isl_ast_expr_free(init);
      isl_ast_expr_free(cond);
      isl_ast_node_free(body);
      if (!var.ok() || !lo.ok() || !c.ok())
        return absl::InternalError("unsupported loop in isl AST");
      if (!inner.ok()) return inner.status();
      // cond is "var <= hi" or "var < hi" with constant bounds for rectangular nests.
      const Expr& cx = *c;
      if ((cx.op() != Expr::Op::kLe && cx.op() != Expr::Op::kLt) || !cx.args()[1].IsConst() ||
          !lo->IsConst()) {
        return absl::InternalError(absl::StrCat("loop ", var->name(), " has non-constant bounds"));
      }
      For f;
      f.var = var->name();
      f.lo = *lo;
      f.extent = cx.args()[1].value() - lo->value() + (cx.op() == Expr::Op::kLe ? 1 : 0);
      f.body = *std::move(inner);
      return MakeStmt(std::move(f));
    }
    case isl_ast_node_user: {
      isl_ast_expr* call = isl_ast_node_user_get_expr(node);
      isl_ast_expr* fn = isl_ast_expr_op_get_arg(call, 0);
      isl_id* id = isl_ast_expr_get_id(fn);
      const std::string name = isl_id_get_name(id);
      isl_id_free(id);
      isl_ast_expr_free(fn);
      isl_ast_expr_free(call);
      return leaf(name);
    }
    default:
      return absl::InternalError("unexpected guard in the isl AST of a rectangular loop nest");
  }
}

}  // namespace

isl::map InputsToParams(const isl::map& m, const std::vector<std::string>& names) {
  isl_map* r = m.copy();
  const isl_size np = isl_map_dim(r, isl_dim_param);
  r = isl_map_move_dims(r, isl_dim_param, np, isl_dim_in, 0, names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    r = isl_map_set_dim_id(r, isl_dim_param, np + i,
                           isl_id_alloc(isl_map_get_ctx(r), names[i].c_str(), nullptr));
  }
  return isl::manage(r);
}

absl::StatusOr<std::vector<Expr>> FunctionToExprs(const isl::map& m, const isl::set& context) {
  isl_ctx* ctx = isl_map_get_ctx(m.get());
  isl_map* aligned = isl_map_align_params(isl_map_reset_tuple_id(m.copy(), isl_dim_in),
                                          isl_set_get_space(context.get()));
  aligned = isl_map_gist_params(aligned, context.copy());
  // isl_pw_multi_aff_from_map declines some single-valued maps whose constraints nest
  // integer divisions (a rotation of an index distributed over two axes); the lexicographic
  // minimum of a single-valued map is the function itself.
  isl_pw_multi_aff* pma = isl_pw_multi_aff_from_map(isl_map_copy(aligned));
  if (pma == nullptr) {
    // Single-valued where the loops run (the context), not necessarily outside it.
    aligned = isl_map_intersect_params(aligned, context.copy());
    if (isl_map_is_single_valued(aligned) == isl_bool_true) {
      pma = isl_map_lexmin_pw_multi_aff(aligned);
      aligned = nullptr;
    }
  }
  isl_map_free(aligned);
  if (pma == nullptr) return absl::InternalError("not a function");
  isl_ast_build* build = isl_ast_build_from_context(context.copy());
  std::vector<Expr> out;
  const isl_size n = isl_pw_multi_aff_dim(pma, isl_dim_out);
  absl::Status status;
  for (isl_size i = 0; i < n && status.ok(); ++i) {
    isl_pw_aff* pa = isl_pw_multi_aff_get_pw_aff(pma, i);
    pa = isl_pw_aff_project_domain_on_params(pa);  // the build works on a parameter space
    isl_ast_expr* e = isl_ast_build_expr_from_pw_aff(build, pa);
    if (e == nullptr) {
      const char* msg = isl_ctx_last_error_msg(ctx);
      status =
          absl::InternalError(absl::StrCat("isl could not print an expression: ", msg ? msg : "?"));
      break;
    }
    absl::StatusOr<Expr> x = ToExpr(e);
    isl_ast_expr_free(e);
    if (!x.ok()) {
      status = x.status();
    } else {
      out.push_back(*std::move(x));
    }
  }
  isl_ast_build_free(build);
  isl_pw_multi_aff_free(pma);
  (void)ctx;
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<StmtPtr> GenerateLoops(
    const isl::union_map& schedule, const isl::set& context,
    const std::vector<std::string>& iterators,
    const std::function<absl::StatusOr<StmtPtr>(const std::string&)>& leaf) {
  isl_ctx* ctx = isl_union_map_get_ctx(schedule.get());
  isl_ast_build* build = isl_ast_build_from_context(context.copy());
  isl_id_list* ids = isl_id_list_alloc(ctx, iterators.size());
  for (const std::string& it : iterators)
    ids = isl_id_list_add(ids, isl_id_alloc(ctx, it.c_str(), nullptr));
  build = isl_ast_build_set_iterators(build, ids);
  isl_ast_node* tree = isl_ast_build_node_from_schedule_map(build, schedule.copy());
  isl_ast_build_free(build);
  if (tree == nullptr) return absl::InternalError("isl could not generate the loop nest");
  absl::StatusOr<StmtPtr> out = ToStmt(tree, leaf);
  isl_ast_node_free(tree);
  return out;
}

}  // namespace meshtune::codegen
