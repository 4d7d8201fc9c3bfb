// The lexer shared by every text format of ir/: problems, extents, meshes and traces.
//
// Scanner splits one input into identifiers, integers and punctuation, and knows each
// token's line and column so that every error message can point at the offending token.
// Input is checked up front: only printable ASCII, tabs and newlines are accepted, and the
// length is capped by the caller. Not thread-safe; cheap to construct.
#ifndef MESHTUNE_IR_SCANNER_H_
#define MESHTUNE_IR_SCANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace meshtune::ir {

struct Token {
  enum Kind { kIdent, kInt, kPunct, kEnd };
  Kind kind = kEnd;
  std::string text;  // the token as written ("+=" for the two-character operator)
  int line = 1;      // 1-based
  int column = 1;    // 1-based
};

// Quotes a token for messages: 'abc', or "end of input".
std::string Describe(const Token& t);

// Tokenizes `text`. `what` names the input in messages ("expression", "trace").
// Returns InvalidArgument when the text is longer than `max_bytes`, holds a byte that is
// not printable ASCII (naming the byte and its position), or a character that starts no
// token. Comments run from '#' to the end of the line.
absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text, absl::string_view what,
                                            size_t max_bytes);

// A cursor over tokens with helpers that produce positioned errors.
class TokenStream {
 public:
  // `show_line`: always say "line L, column C" (else only for multi-line input).
  TokenStream(std::vector<Token> tokens, std::string what, bool show_line = false);

  const Token& Peek(int ahead = 0) const;
  const Token& Next();
  bool AtEnd() const { return Peek().kind == Token::kEnd; }
  // True (and consumes) when the next token is punctuation `p`.
  bool Accept(absl::string_view p);
  // Consumes punctuation `p` or fails naming what was found instead.
  absl::Status Expect(absl::string_view p);
  absl::StatusOr<std::string> ExpectIdent(absl::string_view role);
  // Parses an optionally signed integer literal; fails on overflow of int64.
  absl::StatusOr<int64_t> ExpectInt(absl::string_view role);
  // "line L, column C" (or "column C" for one-line inputs) of `t`.
  std::string Where(const Token& t) const;
  // InvalidArgument "<what> <where>: <message>" at token `t`.
  absl::Status ErrorAt(const Token& t, absl::string_view message) const;

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::string what_;
  bool multiline_ = false;
};

// Parses a decimal int64 literal; fails with a message naming `text` on overflow or junk.
absl::StatusOr<int64_t> ParseInt64(absl::string_view text, absl::string_view role);

// True for [A-Za-z_][A-Za-z0-9_]*.
bool IsIdentifier(absl::string_view s);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_SCANNER_H_
