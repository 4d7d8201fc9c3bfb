// Translation validation's entry points (validate.h), the program's structure and the
// fields of its nodes as the runtime reads them, and the order of the checks (Run). The
// Validator (validator.h) defines its other checks in validate_*.cc.
#include "codegen/validate/validate.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/pattern.h"
#include "codegen/validate/validator.h"
#include "ir/problem.h"

namespace meshtune::codegen {

namespace validation {
namespace {

// The refusal of a program lowered without offsets.
absl::Status NoOffsets() {
  return absl::InvalidArgumentError(
      "the program has no offsets (lowered with LowerOptions::offsets = false)");
}

}  // namespace

absl::Status Validator::Collect(const StmtPtr& s, std::vector<const For*>* loops,
                                std::vector<int64_t>* order) {
  const int64_t index = next_order_++;
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& child : b->body) MT_RETURN_IF_ERROR(Collect(child, loops, order));
    return absl::OkStatus();
  }
  if (const auto* f = std::get_if<For>(&s->node)) {
    if (!f->lo.IsConst()) {
      return absl::UnimplementedError(absl::StrCat("validation needs constant loop bounds; loop ",
                                                   f->var, " starts at ", f->lo.ToString()));
    }
    loops->push_back(f);
    order->push_back(index);
    MT_RETURN_IF_ERROR(Collect(f->body, loops, order));
    order->pop_back();
    loops->pop_back();
    return absl::OkStatus();
  }
  Node n;
  n.id = static_cast<int64_t>(nodes_.size());
  n.stmt = s.get();
  n.loops = *loops;
  n.order = *order;
  n.order.push_back(index);
  nodes_.push_back(std::move(n));
  return absl::OkStatus();
}

// ---- structure ---------------------------------------------------------------------

absl::Status Validator::CheckStructure() {
  MT_RETURN_IF_ERROR(CheckFitsStatement());
  for (const Alloc& a : p_.buffers)
    buffers_[a.buffer] = a.shape;  // the runtime sizes them in order
  if (!p_.body) return absl::InvalidArgumentError("the program has no body");
  std::vector<const For*> loops;
  std::vector<int64_t> order;
  MT_RETURN_IF_ERROR(Collect(p_.body, &loops, &order));
  bool kernel = false;
  for (const Node& n : nodes_) {
    depth_ = std::max(depth_, n.depth());
    if (const auto* k = std::get_if<Compute>(&n.stmt->node)) {
      kernel = true;
      np_ = std::max(np_, k->tile.size());
    }
  }
  if (!kernel) return absl::InvalidArgumentError("the program has no kernel call");

  const std::string& out = prob_.output.tensor;
  const bool accumulate = prob_.assign == ir::Problem::Assign::kAccumulate;
  if (p_.accumulate != accumulate) {
    return Unsound(
        out, "", Point(na_, 0),
        absl::StrCat("every rank starts ", out,
                     accumulate ? " from zero but the statement accumulates ('+=')"
                                : " from its old values but the statement assigns ('=')"));
  }
  // Offsets, shapes and axes of every node, as the runtime indexes them.
  for (const Node& n : nodes_) {
    if (const auto* t = std::get_if<Transfer>(&n.stmt->node)) {
      MT_RETURN_IF_ERROR(CheckTransferFields(*t));
    } else if (const auto* r = std::get_if<Reduce>(&n.stmt->node)) {
      MT_RETURN_IF_ERROR(CheckReduceFields(*r));
    } else if (const auto* k = std::get_if<Compute>(&n.stmt->node)) {
      MT_RETURN_IF_ERROR(CheckKernelFields(*k));
    }
    MT_RETURN_IF_ERROR(CheckPrefetch(n));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckPrefetch(const Node& n) {
  const auto* t = std::get_if<Transfer>(&n.stmt->node);
  const auto* r = std::get_if<Reduce>(&n.stmt->node);
  if (t == nullptr && r == nullptr) return absl::OkStatus();
  const int prefetch = t ? t->prefetch : r->prefetch;
  if (prefetch == 0) return absl::OkStatus();
  const std::string& tensor = t ? t->tensor : r->tensor;
  const std::string& loop = t ? t->loop : r->loop;
  const std::string& buffer = t ? t->buffer : r->buffer;
  const std::string what = t ? "transfer" : "reduction";
  auto unsound = [&](const std::string& why) {
    return Unsound(tensor, loop, {}, absl::StrCat("the prefetched ", what, " ", why));
  };
  if (prefetch != 1) {
    return unsound(
        absl::StrCat("has prefetch=", prefetch, "; a buffer has two halves (prefetch=1)"));
  }
  if (n.depth() == 0 || n.loops.back()->var != loop) {
    return unsound(absl::StrCat(
        "is not in the body of loop ", loop, "'s For",
        n.depth() == 0 ? " (it is outside every loop)"
                       : absl::StrCat(" (its innermost loop is ", n.loops.back()->var, ")"),
        ": no step of its loop drives its two halves"));
  }
  const std::vector<const Node*> writers =
      NodesWith<Transfer>([&](const Transfer& y) { return y.buffer == buffer; });
  const std::vector<const Node*> readers =
      NodesWith<Reduce>([&](const Reduce& y) { return y.buffer == buffer; });
  if (writers.size() + readers.size() != 1) {
    return unsound(absl::StrCat("shares ", buffer,
                                " with another transfer or reduction; a double-buffered buffer "
                                "has one"));
  }
  if (r == nullptr) return absl::OkStatus();
  const std::vector<const Node*> zeros =
      NodesWith<Alloc>([&](const Alloc& z) { return z.zero && z.buffer == buffer; });
  for (const Node* z : zeros) {
    if (z->depth() == n.depth() && CommonDepth(*z, n) == n.depth()) return absl::OkStatus();
  }
  return unsound(absl::StrCat("reads ", buffer, ", which is not zeroed in the body of loop ", loop,
                              ": each step's half must start from zero"));
}

absl::Status Validator::CheckFitsStatement() const {
  if (p_.axis_sizes.size() != na_)
    return absl::InvalidArgumentError("the program's mesh axes and sizes disagree");
  for (int64_t s : p_.axis_sizes) {
    if (s < 1) return absl::InvalidArgumentError("the program's mesh has an empty axis");
  }
  for (const ir::TensorAccess& a : prob_.operands) {
    if (a.tensor == prob_.output.tensor) {
      return absl::UnimplementedError(
          "validation of statements that read their output is not supported");
    }
  }
  for (const std::string& t : prob_.Tensors()) {
    const TensorInfo* info = p_.Tensor(t);
    if (info == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("the program lacks tensor ", t));
    const size_t rank = prob_.Shape(t).size();
    if (info->shape != prob_.Shape(t) || info->local_shape.size() != rank ||
        info->layout.size() != rank || info->is_output != prob_.IsOutput(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the program's tensor ", t, " does not fit the statement"));
    }
  }
  return absl::OkStatus();
}

bool Validator::ValidAxes(const std::vector<int>& axes) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int>(na_)) return false;
    for (size_t j = 0; j < i; ++j) {
      if (axes[j] == axes[i]) return false;
    }
  }
  return true;
}

absl::Status Validator::CheckTransferFields(const Transfer& t) {
  if (prob_.FirstAccess(t.tensor) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("a transfer moves unknown tensor ", t.tensor));
  }
  const size_t rank = prob_.Shape(t.tensor).size();
  const std::vector<Expr>& offset = t.pattern.FromHolders() ? t.global.offset : t.src.offset;
  if (offset.empty() && rank > 0) return NoOffsets();
  std::string why;
  if (prob_.IsOutput(t.tensor)) {
    why = "fetches the output as an input";
  } else if (BufferShape(t.buffer) == nullptr) {
    why = absl::StrCat("fills ", t.buffer, ", which is never allocated");
  } else if (BufferShape(t.buffer)->size() != rank) {
    why = absl::StrCat("fills ", t.buffer, " of the wrong rank");
  } else if (offset.size() != rank) {
    why = "has a box of the wrong rank";
  } else if (!t.pattern.FromHolders() && t.source.size() != na_) {
    why = "names a source of the wrong rank";
  } else if (!ValidAxes(t.pattern.axes)) {
    why = "has invalid mesh axes";
  } else if (const std::string bad = PatternOf(t.pattern.kind).CheckForm(t.pattern); !bad.empty()) {
    why = absl::StrCat("has a malformed pattern: ", bad);
  }
  if (!why.empty()) return Unsound(t.tensor, t.loop, {}, absl::StrCat("the transfer ", why));
  return absl::OkStatus();
}

absl::Status Validator::CheckReduceFields(const Reduce& r) {
  const std::string& out = prob_.output.tensor;
  const size_t rank = prob_.Shape(out).size();
  if (r.global.offset.empty() && rank > 0) return NoOffsets();
  std::string why;
  if (r.tensor != out) {
    why = absl::StrCat("adds into ", r.tensor, ", which is not the output");
  } else if (BufferShape(r.buffer) == nullptr) {
    why = absl::StrCat("reads ", r.buffer, ", which is never allocated");
  } else if (BufferShape(r.buffer)->size() != rank) {
    why = absl::StrCat("reads ", r.buffer, " of the wrong rank");
  } else if (r.global.offset.size() != rank) {
    why = "has a box of the wrong rank";
  } else if (!ValidAxes(r.pattern.axes)) {
    why = "has invalid mesh axes";
  }
  if (!why.empty()) return Unsound(r.tensor, r.loop, {}, absl::StrCat("the reduction ", why));
  return absl::OkStatus();
}

absl::Status Validator::CheckKernelFields(const Compute& k) {
  const std::string& out = prob_.output.tensor;
  std::string why;
  if (k.in.size() != prob_.operands.size()) {
    why = "has the wrong number of operands";
  } else if (k.sum != (prob_.combine == ir::Problem::Combine::kSum)) {
    why = k.sum ? "adds its operands" : "multiplies its operands";
  } else if ((!k.start.empty() || !k.extent.empty()) &&
             (k.start.size() != k.tile.size() || k.extent.size() != k.tile.size())) {
    // Clipping (codegen/program.h) is given for every tile index or for none.
    why = absl::StrCat("clips ", k.start.size(), " starts and ", k.extent.size(),
                       " extents for a tile of ", k.tile.size(), " indices");
  }
  // As program_proto reads them: tiles of at least one value, extents not negative.
  for (size_t j = 0; j < k.tile.size() && why.empty(); ++j) {
    const auto& [idx, size] = k.tile[j];
    if (size < 1) {
      why = absl::StrCat("has a tile of ", size, " values of ", idx);
    } else if (!k.extent.empty() && k.extent[j] < 0) {
      why = absl::StrCat("clips ", idx, " at a negative extent ", k.extent[j]);
    }
  }
  for (size_t i = 0; i <= k.in.size() && why.empty(); ++i) {
    const Operand& o = i == 0 ? k.out : k.in[i - 1];
    const std::string& want = i == 0 ? out : prob_.operands[i - 1].tensor;
    if (o.tensor != want) {
      why = absl::StrCat("uses ", o.tensor, " where the statement has ", want);
      break;
    }
    if (o.slice.offset.empty() && !o.dims.empty()) return NoOffsets();
    const std::vector<int64_t>* shape = OperandShape(o);
    if (shape == nullptr) {
      why = absl::StrCat("uses ", o.buffer, ", which is never allocated");
    } else if (o.dims.size() != shape->size() || o.slice.offset.size() != shape->size()) {
      why = absl::StrCat("indexes ", o.buffer, " with the wrong rank");
    }
  }
  if (!why.empty()) return Unsound(out, "", {}, absl::StrCat("the kernel call ", why));
  return absl::OkStatus();
}

// ---- checks ------------------------------------------------------------------------

absl::Status Validator::CheckHolders() {
  const std::string& out = prob_.output.tensor;
  const std::vector<int64_t> shape = prob_.Shape(out);
  const unsigned nd = shape.size();
  const Frame f(ctx_, na_ + nd);
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(out, f, f.Vars(0, na_), f.Vars(na_, nd)));
  const Frame e(ctx_, nd);
  const isl::set all = e.InBox(e.Vars(0, nd), shape);
  const isl::set holders = Split(held, na_).range();
  if (!all.is_subset(holders)) {
    return Unsound(out, "", {},
                   absl::StrCat(Elem(out, Witness(all.subtract(holders))), " is held by no rank"));
  }
  return absl::OkStatus();
}

absl::Status Validator::Run() {
  MT_RETURN_IF_ERROR(CheckStructure());
  MT_RETURN_IF_ERROR(CheckHolders());
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Transfer>(n.stmt->node)) MT_RETURN_IF_ERROR(CheckTransfer(n));
  }
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Reduce>(n.stmt->node)) MT_RETURN_IF_ERROR(CheckReduce(n));
  }
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Compute>(n.stmt->node)) MT_RETURN_IF_ERROR(CheckKernel(n));
  }
  return CheckInstances();
}

}  // namespace validation

absl::Status ValidateProgram(const ir::Computation& c, const Program& p, Unsoundness* why) {
  validation::Validator v(c, p);
  absl::Status status;
  try {
    status = v.Run();
  } catch (const isl::exception& e) {
    return absl::InternalError(absl::StrCat("isl failed while validating: ", e.what()));
  }
  if (why != nullptr && v.found().has_value()) *why = *v.found();
  return status;
}

absl::Status AdmitProgram(const ir::Computation& c, const Program& p) {
  const absl::Status valid = ValidateProgram(c, p);
  if (absl::IsUnimplemented(valid))
    return absl::FailedPreconditionError(absl::StrCat("unvalidated: ", valid.message()));
  return valid;
}

absl::StatusOr<Program> LowerValidated(const ir::Computation& c, const LowerOptions& options) {
  LowerOptions with_offsets = options;
  with_offsets.offsets = true;
  MT_ASSIGN_OR_RETURN(Program p, Lower(c, with_offsets));
  MT_RETURN_IF_ERROR(AdmitProgram(c, p));
  return p;
}

}  // namespace meshtune::codegen
