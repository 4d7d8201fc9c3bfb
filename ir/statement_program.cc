#include "ir/statement_program.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "ir/scanner.h"

namespace meshtune::ir {

std::vector<std::string> StatementProgram::Tensors() const {
  std::vector<std::string> out;
  for (const Problem& p : statements) {
    for (const std::string& t : p.Tensors()) {
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
  }
  return out;
}

StatementProgram::Role StatementProgram::RoleOf(const std::string& tensor) const {
  const int producer = Producer(tensor);
  if (producer < 0) {
    const std::vector<std::string> tensors = Tensors();
    MT_CHECK(std::find(tensors.begin(), tensors.end(), tensor) != tensors.end());
    return Role::kInput;
  }
  for (int c : Consumers(tensor)) {
    if (c > producer) return Role::kIntermediate;
  }
  return Role::kOutput;
}

int StatementProgram::Producer(const std::string& tensor) const {
  for (size_t s = 0; s < statements.size(); ++s) {
    if (statements[s].output.tensor == tensor) return static_cast<int>(s);
  }
  return -1;
}

std::vector<int> StatementProgram::Consumers(const std::string& tensor) const {
  std::vector<int> out;
  for (size_t s = 0; s < statements.size(); ++s) {
    for (const TensorAccess& a : statements[s].operands) {
      if (a.tensor == tensor) {
        out.push_back(static_cast<int>(s));
        break;
      }
    }
  }
  return out;
}

int StatementProgram::Home(const std::string& tensor) const {
  const int producer = Producer(tensor);
  if (producer >= 0) return producer;
  const std::vector<int> c = Consumers(tensor);
  return c.empty() ? -1 : c.front();
}

std::vector<int64_t> StatementProgram::Shape(const std::string& tensor) const {
  for (const Problem& p : statements) {
    if (p.FirstAccess(tensor) != nullptr) return p.Shape(tensor);
  }
  MT_CHECK(false && "unknown tensor");
  return {};
}

std::vector<std::string> StatementProgram::Outputs() const {
  std::vector<std::string> out;
  for (const std::string& t : Tensors()) {
    if (RoleOf(t) == Role::kOutput) out.push_back(t);
  }
  return out;
}

std::vector<std::string> StatementProgram::Intermediates() const {
  std::vector<std::string> out;
  for (const std::string& t : Tensors()) {
    if (RoleOf(t) == Role::kIntermediate) out.push_back(t);
  }
  return out;
}

std::string StatementProgram::ToString() const {
  std::vector<std::string> parts;
  for (const Problem& p : statements) parts.push_back(p.ToString());
  return absl::StrJoin(parts, "; ");
}

std::string StatementProgram::ExtentsString() const {
  std::vector<std::string> parts;
  for (const auto& [index, extent] : extents) parts.push_back(absl::StrCat(index, "=", extent));
  return absl::StrJoin(parts, ",");
}

std::string StatementProgram::Fingerprint() const {
  std::map<std::string, std::string> tensor_map, index_map;
  std::vector<std::string> index_names;  // index_names[j] becomes "i<j>"
  auto rename = [&](TensorAccess* a) {
    auto t = tensor_map.emplace(a->tensor, absl::StrCat("T", tensor_map.size())).first;
    a->tensor = t->second;
    for (std::string& i : a->indices) {
      auto [it, inserted] = index_map.emplace(i, absl::StrCat("i", index_map.size()));
      if (inserted) index_names.push_back(i);
      i = it->second;
    }
  };
  std::vector<std::string> texts;
  for (const Problem& p : statements) {
    Problem canonical = p;
    rename(&canonical.output);
    for (TensorAccess& a : canonical.operands) rename(&a);
    texts.push_back(canonical.ToString());
  }
  std::vector<std::string> ext;
  for (size_t j = 0; j < index_names.size(); ++j) {
    const auto it = extents.find(index_names[j]);
    ext.push_back(absl::StrCat("i", j, "=", it == extents.end() ? int64_t{0} : it->second));
  }
  return absl::StrCat(absl::StrJoin(texts, "; "), " with ", absl::StrJoin(ext, ","), " ",
                      DTypeName(dtype));
}

StatementProgram ProgramOf(const Problem& problem) {
  StatementProgram out;
  out.statements = {problem};
  out.extents = problem.extents;
  out.dtype = problem.dtype;
  return out;
}

namespace {

// The statements of a program's text, split at ';' and newlines with comments removed.
struct SplitText {
  std::vector<absl::string_view> statements;  // the non-blank pieces, in order
  bool has_semicolon = false;                 // a ';' outside comments
  absl::Status comment_bytes;                 // a byte in a comment that is not printable ASCII
};

bool IsBlank(absl::string_view piece) {
  return std::all_of(piece.begin(), piece.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

SplitText Split(absl::string_view text) {
  SplitText out;
  size_t start = 0;
  int line = 1;
  int column = 1;
  auto flush = [&](size_t end) {
    const absl::string_view piece = text.substr(start, end - start);
    if (!IsBlank(piece)) out.statements.push_back(piece);
  };
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = text[i];
    if (c == '#') {
      flush(i);
      for (; i < text.size() && text[i] != '\n'; ++i, ++column) {
        const unsigned char d = text[i];
        if (out.comment_bytes.ok() &&
            (d >= 0x80 || d == 0x7f || (d < 0x20 && d != '\t' && d != '\r'))) {
          out.comment_bytes = absl::InvalidArgumentError(absl::StrFormat(
              "program line %d, column %d: byte 0x%02X is not printable ASCII", line, column, d));
        }
      }
      start = i;  // the '\n' ending the comment, or the end
      continue;
    }
    if (c == ';' || c == '\n') {
      flush(i);
      out.has_semicolon |= c == ';';
      start = i + 1;
      if (c == '\n') {
        ++line;
        column = 0;
      }
    }
    ++i;
    ++column;
  }
  flush(text.size());
  return out;
}

// The dtype `dtype` names, with ParseProblem's message for a bad one.
absl::StatusOr<DType> ParseDTypeText(absl::string_view dtype) {
  if (dtype.empty() || dtype == "f32") return DType::kF32;
  if (dtype == "f64") return DType::kF64;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", base::Excerpt(dtype), "' (expected f32 or f64)"));
}

// The entries of `all` for the names inside brackets of `statement` (its indices, when it
// parses), as extents text. When `statement` does not tokenize, `all_text` itself
// (ParseProblem then fails on the statement before it reads extents).
std::string OwnExtents(absl::string_view statement, const std::map<std::string, int64_t>& all,
                       absl::string_view all_text) {
  absl::StatusOr<std::vector<Token>> tokens =
      Tokenize(statement, "expression", kMaxExpressionBytes);
  if (!tokens.ok()) return std::string(all_text);
  std::set<std::string> names;
  int depth = 0;
  for (const Token& t : *tokens) {
    if (t.kind == Token::kPunct && t.text == "[") ++depth;
    if (t.kind == Token::kPunct && t.text == "]" && depth > 0) --depth;
    if (t.kind == Token::kIdent && depth > 0) names.insert(t.text);
  }
  std::vector<std::string> parts;
  for (const std::string& n : names) {
    const auto it = all.find(n);
    if (it != all.end()) parts.push_back(absl::StrCat(n, "=", it->second));
  }
  return absl::StrJoin(parts, ",");
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// What the checks across statements know of one tensor.
struct TensorUse {
  int first_statement = 0;  // 0-based
  std::vector<int64_t> shape;
  int writer = -1;
  int first_reader = -1;
};

// Checks that every tensor has one shape in every statement, at most one writer, no read
// before its write, and that an intermediate is written with '='.
absl::Status CheckDataflow(const StatementProgram& program) {
  std::map<std::string, TensorUse> uses;
  for (int s = 0; s < static_cast<int>(program.statements.size()); ++s) {
    const Problem& p = program.statements[s];
    for (const std::string& t : p.Tensors()) {
      const std::vector<int64_t> shape = p.Shape(t);
      auto [it, inserted] = uses.emplace(t, TensorUse{s, shape});
      if (!inserted && it->second.shape != shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", base::Excerpt(t), " is ", ShapeText(it->second.shape), " in statement ",
            it->second.first_statement + 1, " but ", ShapeText(shape), " in statement ", s + 1));
      }
    }
    for (const TensorAccess& a : p.operands) {
      TensorUse& use = uses.at(a.tensor);
      if (use.first_reader < 0) use.first_reader = s;
      if (use.writer >= 0 &&
          program.statements[use.writer].assign == Problem::Assign::kAccumulate) {
        return absl::InvalidArgumentError(absl::StrCat("intermediate ", base::Excerpt(a.tensor),
                                                       " must be written with '=' (statement ",
                                                       use.writer + 1, " uses '+=')"));
      }
    }
    TensorUse& out = uses.at(p.output.tensor);
    if (out.writer >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", base::Excerpt(p.output.tensor),
                                                     " is written by statements ", out.writer + 1,
                                                     " and ", s + 1));
    }
    if (out.first_reader >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", base::Excerpt(p.output.tensor),
                                                     " is read by statement ", out.first_reader + 1,
                                                     " before statement ", s + 1, " writes it"));
    }
    out.writer = s;
  }
  return absl::OkStatus();
}

// Parses the statements of `split` (several) into `program`, each with its own extents, and
// checks that every extent is some statement's index.
absl::Status ParseStatements(const SplitText& split, absl::string_view extents,
                             absl::string_view dtype, StatementProgram* program) {
  MT_ASSIGN_OR_RETURN(program->dtype, ParseDTypeText(dtype));
  MT_ASSIGN_OR_RETURN(program->extents, ParseExtents(extents));
  std::set<std::string> used;
  for (size_t s = 0; s < split.statements.size(); ++s) {
    const absl::string_view text = split.statements[s];
    absl::StatusOr<Problem> p =
        ParseProblem(text, OwnExtents(text, program->extents, extents), dtype);
    if (!p.ok()) {
      return absl::Status(p.status().code(),
                          absl::StrCat("statement ", s + 1, ": ", p.status().message()));
    }
    used.insert(p->indices.begin(), p->indices.end());
    program->statements.push_back(*std::move(p));
  }
  for (const auto& [index, extent] : program->extents) {
    if (!used.count(index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("extent for unknown index '", base::Excerpt(index), "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StatementProgram> ParseStatementProgram(absl::string_view expr,
                                                       absl::string_view extents,
                                                       absl::string_view dtype) {
  const SplitText split = Split(expr);
  if (split.statements.size() <= 1 && !split.has_semicolon) {
    // One statement (or none): exactly ParseProblem (its limits, its positions, its handling
    // of comments and blank lines, its message for an empty expression).
    MT_ASSIGN_OR_RETURN(Problem p, ParseProblem(expr, extents, dtype));
    return ProgramOf(p);
  }
  if (expr.size() > kMaxProgramBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the program is %d bytes long; the limit is %d bytes", expr.size(), kMaxProgramBytes));
  }
  if (split.statements.empty()) return absl::InvalidArgumentError("the program has no statement");
  if (split.statements.size() > static_cast<size_t>(kMaxStatements)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the program has %d statements; the limit is %d", split.statements.size(), kMaxStatements));
  }
  MT_RETURN_IF_ERROR(split.comment_bytes);
  if (split.statements.size() == 1) {
    MT_ASSIGN_OR_RETURN(Problem p, ParseProblem(split.statements[0], extents, dtype));
    return ProgramOf(p);
  }
  StatementProgram program;
  MT_RETURN_IF_ERROR(ParseStatements(split, extents, dtype, &program));
  MT_RETURN_IF_ERROR(CheckDataflow(program));
  return program;
}

}  // namespace meshtune::ir
