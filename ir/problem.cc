#include "ir/problem.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "ir/scanner.h"

namespace meshtune::ir {

absl::string_view DTypeName(DType t) { return t == DType::kF64 ? "f64" : "f32"; }
int64_t DTypeBytes(DType t) { return t == DType::kF64 ? 8 : 4; }

std::string TensorAccess::ToString() const {
  return absl::StrCat(tensor, "[", absl::StrJoin(indices, ","), "]");
}

std::vector<std::string> Problem::Tensors() const {
  std::vector<std::string> out = {output.tensor};
  for (const TensorAccess& a : operands) {
    if (std::find(out.begin(), out.end(), a.tensor) == out.end()) out.push_back(a.tensor);
  }
  return out;
}

const TensorAccess* Problem::FirstAccess(const std::string& tensor) const {
  if (output.tensor == tensor) return &output;
  for (const TensorAccess& a : operands) {
    if (a.tensor == tensor) return &a;
  }
  return nullptr;
}

std::vector<int64_t> Problem::Shape(const std::string& tensor) const {
  const TensorAccess* a = FirstAccess(tensor);
  std::vector<int64_t> shape;
  if (a == nullptr) return shape;
  for (const std::string& i : a->indices) shape.push_back(extents.at(i));
  return shape;
}

bool Problem::IsReductionIndex(const std::string& index) const {
  return std::find(output.indices.begin(), output.indices.end(), index) == output.indices.end();
}

int Problem::IndexPosition(const std::string& index) const {
  auto it = std::find(indices.begin(), indices.end(), index);
  return it == indices.end() ? -1 : static_cast<int>(it - indices.begin());
}

std::string Problem::ToString() const {
  std::vector<std::string> ops;
  for (const TensorAccess& a : operands) ops.push_back(a.ToString());
  return absl::StrCat(output.ToString(), assign == Assign::kSet ? " = " : " += ",
                      absl::StrJoin(ops, combine == Combine::kProduct ? " * " : " + "));
}

std::string Problem::ExtentsString() const {
  std::vector<std::string> parts;
  for (const std::string& i : indices) parts.push_back(absl::StrCat(i, "=", extents.at(i)));
  return absl::StrJoin(parts, ",");
}

std::vector<std::string> Problem::LayoutFlags() const {
  std::vector<std::string> out;
  for (const auto& [tensor, layout] : layouts) out.push_back(tensor + "=" + layout.ToString());
  return out;
}

const GivenLayout* Problem::LayoutOf(const std::string& tensor) const {
  const auto it = layouts.find(tensor);
  return it == layouts.end() || it->second.kind == GivenLayout::Kind::kBlock ? nullptr
                                                                             : &it->second;
}

namespace {

struct ParsedAccess {
  TensorAccess access;
  std::vector<Token> index_tokens;
  Token name_token;
};

absl::StatusOr<ParsedAccess> ParseAccess(TokenStream& ts) {
  ParsedAccess out;
  out.name_token = ts.Peek();
  absl::StatusOr<std::string> name = ts.ExpectIdent("a tensor name");
  if (!name.ok()) return name.status();
  out.access.tensor = *name;
  const Token open = ts.Peek();
  if (!ts.Accept("[")) {
    return ts.ErrorAt(open, absl::StrCat("expected '[' after tensor ", base::Excerpt(*name),
                                         " but found ", Describe(open)));
  }
  if (!ts.Accept("]")) {
    while (true) {
      const Token idx = ts.Peek();
      if (idx.kind != Token::kIdent) {
        if (idx.kind == Token::kEnd) {
          return ts.ErrorAt(
              open, absl::StrCat("unbalanced '[' of ", base::Excerpt(*name), ": no closing ']'"));
        }
        return ts.ErrorAt(idx, absl::StrCat("expected an index name in ", base::Excerpt(*name),
                                            "[...] but found ", Describe(idx)));
      }
      ts.Next();
      for (size_t j = 0; j < out.access.indices.size(); ++j) {
        if (out.access.indices[j] == idx.text) {
          return ts.ErrorAt(
              idx, absl::StrCat("index ", base::Excerpt(idx.text), " is repeated in tensor ",
                                base::Excerpt(*name), " (diagonal accesses are not supported)"));
        }
      }
      out.access.indices.push_back(idx.text);
      out.index_tokens.push_back(idx);
      if (ts.Accept(",")) continue;
      if (ts.Accept("]")) break;
      const Token bad = ts.Peek();
      if (bad.kind == Token::kEnd) {
        return ts.ErrorAt(
            open, absl::StrCat("unbalanced '[' of ", base::Excerpt(*name), ": no closing ']'"));
      }
      return ts.ErrorAt(bad, absl::StrCat("expected ',' or ']' in ", base::Excerpt(*name),
                                          "[...] but found ", Describe(bad)));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, int64_t>> ParseExtents(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text, "extents", kMaxExpressionBytes);
  if (!tokens.ok()) return tokens.status();
  TokenStream ts(std::move(*tokens), "extents");
  std::map<std::string, int64_t> out;
  if (ts.AtEnd()) return ts.ErrorAt(ts.Peek(), "no extents given (expected e.g. m=512,n=1024)");
  while (!ts.AtEnd()) {
    const Token name_tok = ts.Peek();
    absl::StatusOr<std::string> name = ts.ExpectIdent("an index name");
    if (!name.ok()) return name.status();
    if (absl::Status s = ts.Expect("="); !s.ok()) return s;
    const Token value_tok = ts.Peek();
    absl::StatusOr<int64_t> value = ts.ExpectInt(absl::StrCat("extent of ", base::Excerpt(*name)));
    if (!value.ok()) return value.status();
    if (*value <= 0) {
      return ts.ErrorAt(value_tok, absl::StrCat("extent of ", base::Excerpt(*name),
                                                " must be positive, got ", *value));
    }
    if (!out.emplace(*name, *value).second) {
      return ts.ErrorAt(name_tok,
                        absl::StrCat("extent of ", base::Excerpt(*name), " is given twice"));
    }
    ts.Accept(",");
  }
  return out;
}

namespace {

// The dtype `dtype` names: "f32" (or empty) or "f64"; InvalidArgument otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view dtype) {
  if (dtype.empty() || dtype == "f32") return DType::kF32;
  if (dtype == "f64") return DType::kF64;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", base::Excerpt(dtype), "' (expected f32 or f64)"));
}

// Parses the output access and the '=' or '+=' after it into p->output and p->assign.
absl::StatusOr<ParsedAccess> ParseLeftHandSide(TokenStream& ts, Problem* p) {
  absl::StatusOr<ParsedAccess> out = ParseAccess(ts);
  if (!out.ok()) return out.status();
  p->output = out->access;
  const Token op = ts.Peek();
  if (ts.Accept("+=")) {
    p->assign = Problem::Assign::kAccumulate;
  } else if (ts.Accept("=")) {
    p->assign = Problem::Assign::kSet;
  } else {
    return ts.ErrorAt(
        op, absl::StrCat("expected '=' or '+=' after ", base::Excerpt(p->output.ToString()),
                         " but found ", Describe(op)));
  }
  return out;
}

// Parses the operands up to the end of `ts` and sets p->combine from the operator between
// them ('*' unless they are added); checks their number against it.
absl::StatusOr<std::vector<ParsedAccess>> ParseRightHandSide(TokenStream& ts, Problem* p) {
  std::vector<ParsedAccess> operands;
  std::string combine_op;
  while (true) {
    absl::StatusOr<ParsedAccess> a = ParseAccess(ts);
    if (!a.ok()) return a.status();
    operands.push_back(*std::move(a));
    const Token sep = ts.Peek();
    if (ts.AtEnd()) break;
    if (sep.kind == Token::kPunct && (sep.text == "*" || sep.text == "+")) {
      if (!combine_op.empty() && combine_op != sep.text) {
        return ts.ErrorAt(sep, "mixing '*' and '+' in one statement is not supported");
      }
      combine_op = sep.text;
      ts.Next();
      continue;
    }
    if (sep.kind == Token::kPunct && sep.text == "]") {
      return ts.ErrorAt(sep, "unbalanced ']' with no matching '['");
    }
    return ts.ErrorAt(
        sep, absl::StrCat("expected '*', '+' or end of expression but found ", Describe(sep)));
  }
  p->combine = combine_op == "+" ? Problem::Combine::kSum : Problem::Combine::kProduct;
  if (p->combine == Problem::Combine::kProduct && operands.size() > 3) {
    return ts.ErrorAt(operands[3].name_token,
                      absl::StrCat("a contraction has at most 3 operands; ",
                                   operands[3].access.tensor, " is the 4th"));
  }
  if (p->combine == Problem::Combine::kSum && operands.size() != 2) {
    return ts.ErrorAt(operands.size() > 2 ? operands[2].name_token : operands[0].name_token,
                      "an element-wise sum has exactly 2 operands");
  }
  return operands;
}

// The first access of each tensor, by name.
using FirstAccesses = std::map<std::string, const ParsedAccess*>;

// Checks that every tensor has one rank everywhere and that the output is not read; appends
// the operands to p->operands and returns each tensor's first access.
absl::StatusOr<FirstAccesses> CheckTensors(TokenStream& ts, const ParsedAccess& out,
                                           const std::vector<ParsedAccess>& operands, Problem* p) {
  FirstAccesses first;
  first[p->output.tensor] = &out;
  for (const ParsedAccess& a : operands) {
    if (a.access.tensor == p->output.tensor) {
      return ts.ErrorAt(a.name_token,
                        absl::StrCat("output tensor ", base::Excerpt(p->output.tensor),
                                     " also appears on the right-hand side"));
    }
    auto [it, inserted] = first.emplace(a.access.tensor, &a);
    if (!inserted && it->second->access.indices.size() != a.access.indices.size()) {
      return ts.ErrorAt(
          a.name_token,
          absl::StrCat("tensor ", base::Excerpt(a.access.tensor), " is used with ",
                       it->second->access.indices.size(), " indices in ",
                       base::Excerpt(it->second->access.ToString()), " but ",
                       a.access.indices.size(), " in ", base::Excerpt(a.access.ToString())));
    }
    p->operands.push_back(a.access);
  }
  return first;
}

// Checks that every output index is read, that an element-wise sum reduces nothing and
// that no name is both a tensor and an index; sets p->indices (sorted by name).
absl::Status CheckIndices(TokenStream& ts, const ParsedAccess& out,
                          const std::vector<ParsedAccess>& operands, const FirstAccesses& first,
                          Problem* p) {
  std::set<std::string> read;
  for (const ParsedAccess& a : operands)
    read.insert(a.access.indices.begin(), a.access.indices.end());
  for (size_t j = 0; j < p->output.indices.size(); ++j) {
    if (!read.count(p->output.indices[j])) {
      return ts.ErrorAt(
          out.index_tokens[j],
          absl::StrCat("index ", base::Excerpt(p->output.indices[j]), " of the output ",
                       base::Excerpt(p->output.ToString()), " is read by no operand"));
    }
  }
  if (p->combine == Problem::Combine::kSum) {
    for (const ParsedAccess& a : operands) {
      for (size_t j = 0; j < a.access.indices.size(); ++j) {
        if (p->IsReductionIndex(a.access.indices[j])) {
          return ts.ErrorAt(
              a.index_tokens[j],
              absl::StrCat("index ", base::Excerpt(a.access.indices[j]), " of ",
                           base::Excerpt(a.access.ToString()),
                           " is not in the output; an element-wise sum cannot reduce"));
        }
      }
    }
  }
  for (const auto& [name, a] : first) {
    if (read.count(name)) {
      return ts.ErrorAt(a->name_token, absl::StrCat("name ", base::Excerpt(name),
                                                    " is used both as a tensor and as an index"));
    }
  }
  p->indices.assign(read.begin(), read.end());  // std::set: sorted by name
  return absl::OkStatus();
}

// Parses `extents` into p->extents: exactly one for each of p->indices.
absl::Status SetExtents(absl::string_view extents, Problem* p) {
  absl::StatusOr<std::map<std::string, int64_t>> ext = ParseExtents(extents);
  if (!ext.ok()) return ext.status();
  for (const auto& [name, value] : *ext) {
    if (std::find(p->indices.begin(), p->indices.end(), name) == p->indices.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("extent given for unknown index ", base::Excerpt(name), " (the indices of ",
                       base::Excerpt(p->ToString(), 2 * base::kMaxExcerpt), " are ",
                       base::ExcerptList(p->indices), ")"));
    }
  }
  for (const std::string& i : p->indices) {
    auto it = ext->find(i);
    if (it == ext->end()) {
      return absl::InvalidArgumentError(absl::StrCat("index ", base::Excerpt(i),
                                                     " has no extent (add ", base::Excerpt(i),
                                                     "=<size> to the extents)"));
    }
  }
  p->extents = *std::move(ext);
  return absl::OkStatus();
}

// Checks that no tensor has more than kMaxTensorElements elements, that the iteration
// space has at most kMaxIterationPoints points and that each tensor has one shape.
absl::Status CheckSizes(const Problem& p) {
  for (const std::string& t : p.Tensors()) {
    const TensorAccess* a = p.FirstAccess(t);
    int64_t elements = 1;
    for (const std::string& i : a->indices) {
      const int64_t e = p.extents.at(i);
      if (elements > kMaxTensorElements / e) {
        return absl::InvalidArgumentError(absl::StrCat("tensor ", base::Excerpt(a->ToString()),
                                                       " is too large: more than 2^48 elements"));
      }
      elements *= e;
    }
  }
  // The iteration space: every point is one update, and counts of points (a rank's share
  // of the work, a verification's cost) are 64-bit products of extents.
  int64_t points = 1;
  for (const std::string& i : p.indices) {
    const int64_t e = p.extents.at(i);
    if (points > kMaxIterationPoints / e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the iteration space of ", base::Excerpt(p.ToString(), 2 * base::kMaxExcerpt),
          " is too large: the extents of ", base::ExcerptList(p.indices),
          " multiply to more than 2^62 points"));
    }
    points *= e;
  }
  for (const TensorAccess& a : p.operands) {
    const TensorAccess* f = p.FirstAccess(a.tensor);
    if (p.Shape(a.tensor) != [&] {
          std::vector<int64_t> s;
          for (const std::string& i : a.indices) s.push_back(p.extents.at(i));
          return s;
        }()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", base::Excerpt(a.tensor), " has different shapes in ",
                       base::Excerpt(f->ToString()), " and ", base::Excerpt(a.ToString())));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Problem> ParseProblem(absl::string_view expr, absl::string_view extents,
                                     absl::string_view dtype) {
  Problem p;
  absl::StatusOr<DType> type = ParseDType(dtype);
  if (!type.ok()) return type.status();
  p.dtype = *type;
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(expr, "expression", kMaxExpressionBytes);
  if (!tokens.ok()) return tokens.status();
  TokenStream ts(std::move(*tokens), "expression");
  if (ts.AtEnd())
    return ts.ErrorAt(ts.Peek(), "empty expression (expected e.g. C[m,n] += A[m,k] * B[k,n])");

  absl::StatusOr<ParsedAccess> out = ParseLeftHandSide(ts, &p);
  if (!out.ok()) return out.status();
  absl::StatusOr<std::vector<ParsedAccess>> operands = ParseRightHandSide(ts, &p);
  if (!operands.ok()) return operands.status();
  absl::StatusOr<FirstAccesses> first = CheckTensors(ts, *out, *operands, &p);
  if (!first.ok()) return first.status();
  if (absl::Status s = CheckIndices(ts, *out, *operands, *first, &p); !s.ok()) return s;
  if (absl::Status s = SetExtents(extents, &p); !s.ok()) return s;
  if (absl::Status s = CheckSizes(p); !s.ok()) return s;
  return p;
}

}  // namespace meshtune::ir
