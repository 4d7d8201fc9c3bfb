#include "ir/scanner.h"

#include <cctype>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/excerpt.h"

namespace meshtune::ir {

std::string Describe(const Token& t) {
  if (t.kind == Token::kEnd) return "end of input";
  return absl::StrCat("'", base::Excerpt(t.text), "'");
}

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

absl::StatusOr<int64_t> ParseInt64(absl::string_view text, absl::string_view role) {
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(role, " is empty"));
  size_t i = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    i = 1;
  }
  if (i == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " '", base::Excerpt(text), "' is not an integer"));
  }
  uint64_t value = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : std::numeric_limits<int64_t>::max();
  for (; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, " '", base::Excerpt(text), "' is not an integer"));
    }
    const uint64_t digit = text[i] - '0';
    if (value > (limit - digit) / 10) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, " '", base::Excerpt(text), "' overflows a 64-bit integer"));
    }
    value = value * 10 + digit;
  }
  if (negative)
    return value == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min()
                                        : -static_cast<int64_t>(value);
  return static_cast<int64_t>(value);
}

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text, absl::string_view what,
                                            size_t max_bytes) {
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is %d bytes long; the limit is %d bytes",
                                                      what, text.size(), max_bytes));
  }
  std::vector<Token> out;
  int line = 1;
  int column = 1;
  size_t i = 0;
  auto error = [&](absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s line %d, column %d: %s", what, line, column, message));
  };
  while (i < text.size()) {
    const unsigned char c = text[i];
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
      return error(absl::StrFormat("byte 0x%02X is not printable ASCII", c));
    }
    if (c == '\n') {
      ++line;
      column = 1;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      ++column;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') {
        const unsigned char d = text[i];
        if (d >= 0x80 || d == 0x7f || (d < 0x20 && d != '\t' && d != '\r')) {
          return error(absl::StrFormat("byte 0x%02X is not printable ASCII", d));
        }
        ++i;
        ++column;
      }
      continue;
    }
    Token t;
    t.line = line;
    t.column = column;
    size_t j = i;
    if (std::isalpha(c) || c == '_') {
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) {
        ++j;
      }
      t.kind = Token::kIdent;
    } else if (std::isdigit(c)) {
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      t.kind = Token::kInt;
    } else if (c == '+' && i + 1 < text.size() && text[i + 1] == '=') {
      j = i + 2;
      t.kind = Token::kPunct;
    } else if (absl::string_view("[](),=+-*%@:.;/").find(static_cast<char>(c)) !=
               absl::string_view::npos) {
      j = i + 1;
      t.kind = Token::kPunct;
    } else {
      return error(absl::StrFormat("unexpected character '%c'", c));
    }
    t.text = std::string(text.substr(i, j - i));
    column += static_cast<int>(j - i);
    i = j;
    out.push_back(std::move(t));
  }
  Token end;
  end.kind = Token::kEnd;
  end.line = line;
  end.column = column;
  out.push_back(end);
  return out;
}

TokenStream::TokenStream(std::vector<Token> tokens, std::string what, bool show_line)
    : tokens_(std::move(tokens)), what_(std::move(what)) {
  multiline_ = show_line || (!tokens_.empty() && tokens_.back().line > 1);
}

const Token& TokenStream::Peek(int ahead) const {
  const size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
  return tokens_[i];
}

const Token& TokenStream::Next() {
  const Token& t = tokens_[pos_];
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return t;
}

bool TokenStream::Accept(absl::string_view p) {
  if (Peek().kind == Token::kPunct && Peek().text == p) {
    Next();
    return true;
  }
  return false;
}

absl::Status TokenStream::Expect(absl::string_view p) {
  if (Accept(p)) return absl::OkStatus();
  return ErrorAt(Peek(), absl::StrCat("expected '", p, "' but found ", Describe(Peek())));
}

absl::StatusOr<std::string> TokenStream::ExpectIdent(absl::string_view role) {
  if (Peek().kind != Token::kIdent) {
    return ErrorAt(Peek(), absl::StrCat("expected ", role, " but found ", Describe(Peek())));
  }
  return Next().text;
}

absl::StatusOr<int64_t> TokenStream::ExpectInt(absl::string_view role) {
  const Token& start = Peek();
  bool negative = false;
  if (start.kind == Token::kPunct && start.text == "-") {
    negative = true;
    Next();
  }
  if (Peek().kind != Token::kInt) {
    return ErrorAt(Peek(),
                   absl::StrCat("expected ", role, " (an integer) but found ", Describe(Peek())));
  }
  const Token& t = Next();
  absl::StatusOr<int64_t> v = ParseInt64(negative ? "-" + t.text : t.text, role);
  if (!v.ok()) return ErrorAt(start, v.status().message());
  return v;
}

std::string TokenStream::Where(const Token& t) const {
  if (multiline_) return absl::StrFormat("line %d, column %d", t.line, t.column);
  return absl::StrFormat("column %d", t.column);
}

absl::Status TokenStream::ErrorAt(const Token& t, absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(what_, " ", Where(t), ": ", message));
}

}  // namespace meshtune::ir
