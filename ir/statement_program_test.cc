// Programs of statements: the MLP chain parses with its roles, producers, consumers and shapes;
// separators and comments; one statement parses exactly as ParseProblem; every error with its
// message; fingerprints equal under any renaming and different for any other change.
#include "ir/statement_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/problem.h"

namespace meshtune::ir {
namespace {

constexpr char kMlp[] = "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]";
constexpr char kMlpExtents[] = "b=2048,d=1024,e=1024,f=4096";

StatementProgram Parse(const std::string& expr, const std::string& extents,
                       const std::string& dtype = "f32") {
  absl::StatusOr<StatementProgram> p = ParseStatementProgram(expr, extents, dtype);
  EXPECT_TRUE(p.ok()) << expr << ": " << p.status();
  return p.ok() ? *p : StatementProgram{};
}

std::string Error(const std::string& expr, const std::string& extents,
                  const std::string& dtype = "f32") {
  absl::StatusOr<StatementProgram> p = ParseStatementProgram(expr, extents, dtype);
  EXPECT_FALSE(p.ok()) << expr << " parsed as " << (p.ok() ? p->ToString() : "");
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(p.status().message());
}

using Role = StatementProgram::Role;

TEST(StatementProgramTest, MlpHasInputsAnIntermediateAndAnOutput) {
  const StatementProgram p = Parse(kMlp, kMlpExtents);
  ASSERT_EQ(p.statements.size(), 2u);
  EXPECT_FALSE(p.single());
  EXPECT_EQ(p.Tensors(), (std::vector<std::string>{"H", "X", "W1", "Y", "W2"}));
  EXPECT_EQ(p.RoleOf("X"), Role::kInput);
  EXPECT_EQ(p.RoleOf("W1"), Role::kInput);
  EXPECT_EQ(p.RoleOf("W2"), Role::kInput);
  EXPECT_EQ(p.RoleOf("H"), Role::kIntermediate);
  EXPECT_EQ(p.RoleOf("Y"), Role::kOutput);
  EXPECT_EQ(p.Outputs(), std::vector<std::string>{"Y"});
  EXPECT_EQ(p.Intermediates(), std::vector<std::string>{"H"});
  EXPECT_EQ(p.Producer("H"), 0);
  EXPECT_EQ(p.Producer("Y"), 1);
  EXPECT_EQ(p.Producer("X"), -1);
  EXPECT_EQ(p.Producer("W2"), -1);
  EXPECT_EQ(p.Consumers("H"), std::vector<int>{1});
  EXPECT_EQ(p.Consumers("X"), std::vector<int>{0});
  EXPECT_EQ(p.Consumers("W2"), std::vector<int>{1});
  EXPECT_TRUE(p.Consumers("Y").empty());
  EXPECT_EQ(p.Shape("H"), (std::vector<int64_t>{2048, 4096}));
  EXPECT_EQ(p.Shape("X"), (std::vector<int64_t>{2048, 1024}));
  EXPECT_EQ(p.Shape("W1"), (std::vector<int64_t>{1024, 4096}));
  EXPECT_EQ(p.Shape("W2"), (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(p.Shape("Y"), (std::vector<int64_t>{2048, 1024}));
  EXPECT_EQ(p.ToString(), kMlp);
  EXPECT_EQ(p.ExtentsString(), kMlpExtents);
  EXPECT_EQ(p.dtype, DType::kF32);
  // Each statement has only its own indices' extents.
  EXPECT_EQ(p.statements[0].ExtentsString(), "b=2048,d=1024,f=4096");
  EXPECT_EQ(p.statements[1].ExtentsString(), "b=2048,e=1024,f=4096");
  EXPECT_EQ(p.statements[1].indices, (std::vector<std::string>{"b", "e", "f"}));
  EXPECT_EQ(p.Fingerprint(),
            "T0[i0,i1] = T1[i0,i2] * T2[i2,i1]; T3[i0,i3] = T0[i0,i1] * T4[i1,i3] with "
            "i0=2048,i1=4096,i2=1024,i3=1024 f32");
  EXPECT_EQ(Parse(kMlp, kMlpExtents, "f64").dtype, DType::kF64);
  EXPECT_EQ(Parse(kMlp, kMlpExtents, "").dtype, DType::kF32);
}

TEST(StatementProgramTest, UnknownTensorCheckFails) {
  const StatementProgram p = Parse(kMlp, kMlpExtents);
  EXPECT_DEATH(p.Shape("Z"), "CHECK");
  EXPECT_DEATH(p.RoleOf("Z"), "CHECK");
  EXPECT_EQ(p.Producer("Z"), -1);
  EXPECT_TRUE(p.Consumers("Z").empty());
}

TEST(StatementProgramTest, AnOutputMayAccumulate) {
  const StatementProgram p =
      Parse("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] += H[b,f] * W2[f,e]", kMlpExtents);
  EXPECT_EQ(p.statements[1].assign, Problem::Assign::kAccumulate);
  EXPECT_EQ(p.Outputs(), std::vector<std::string>{"Y"});
}

TEST(StatementProgramTest, SeparatorsBlankLinesAndComments) {
  const StatementProgram semi = Parse(kMlp, kMlpExtents);
  for (const std::string& text : {
           std::string("H[b,f] = X[b,d] * W1[d,f]\nY[b,e] = H[b,f] * W2[f,e]"),
           std::string("H[b,f] = X[b,d] * W1[d,f];\nY[b,e] = H[b,f] * W2[f,e];"),
           std::string("# the MLP\n\n  H[b,f] = X[b,d] * W1[d,f]  # the first layer\n"
                       "\t\n;;  ; Y[b,e] = H[b,f] * W2[f,e] # the second; not a statement\n\n"),
           std::string("H[b,f] = X[b,d] * W1[d,f]\r\nY[b,e] = H[b,f] * W2[f,e]\r\n"),
       }) {
    const StatementProgram p = Parse(text, kMlpExtents);
    EXPECT_EQ(p.ToString(), semi.ToString()) << text;
    EXPECT_EQ(p.Fingerprint(), semi.Fingerprint()) << text;
  }
  // Several outputs, several consumers of one input.
  const StatementProgram two =
      Parse("C[i,j] = A[i,k] * B[k,j]\nD[i,j] = A[i,k] * E[k,j]\n", "i=2 j=3 k=4");
  EXPECT_EQ(two.Outputs(), (std::vector<std::string>{"C", "D"}));
  EXPECT_TRUE(two.Intermediates().empty());
  EXPECT_EQ(two.Consumers("A"), (std::vector<int>{0, 1}));
}

TEST(StatementProgramTest, ElementWiseStatementInAChain) {
  const StatementProgram p =
      Parse("H[b,f] = X[b,d] * W1[d,f]\nH2[b,f] = H[b,f] + Bias[b,f]\nY[b,e] = H2[b,f] * W2[f,e]",
            kMlpExtents);
  ASSERT_EQ(p.statements.size(), 3u);
  EXPECT_EQ(p.statements[1].combine, Problem::Combine::kSum);
  EXPECT_EQ(p.statements[1].ToString(), "H2[b,f] = H[b,f] + Bias[b,f]");
  EXPECT_EQ(p.Intermediates(), (std::vector<std::string>{"H", "H2"}));
  EXPECT_EQ(p.Outputs(), std::vector<std::string>{"Y"});
  EXPECT_EQ(p.RoleOf("Bias"), Role::kInput);
  EXPECT_EQ(p.Shape("Bias"), (std::vector<int64_t>{2048, 4096}));
  EXPECT_EQ(p.Producer("H2"), 1);
  EXPECT_EQ(p.Consumers("H2"), std::vector<int>{2});
  EXPECT_EQ(p.Consumers("H"), std::vector<int>{1});
}

// The fields of a Problem a parse sets.
void ExpectSameProblem(const Problem& a, const Problem& b) {
  EXPECT_EQ(a.ToString(), b.ToString());
  EXPECT_EQ(a.output, b.output);
  EXPECT_EQ(a.operands, b.operands);
  EXPECT_EQ(a.assign, b.assign);
  EXPECT_EQ(a.combine, b.combine);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.extents, b.extents);
  EXPECT_EQ(a.dtype, b.dtype);
}

TEST(StatementProgramTest, OneStatementParsesExactlyAsParseProblem) {
  struct Case {
    std::string expr, extents, dtype;
  };
  const std::vector<Case> ok = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=512 n=1024 k=2048", "f32"},
      {"# a comment\n\n  C[m,n] += A[m,k] * B[k,n]  # trailing\n", "m=4,n=4,k=4", "f64"},
      {"C[i,j] = A[i,j] + B[i,j]", "i=4,j=4", ""},
      {"O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=4,j=5,k=6,l=7", "f32"},
  };
  for (const Case& c : ok) {
    absl::StatusOr<Problem> want = ParseProblem(c.expr, c.extents, c.dtype);
    ASSERT_TRUE(want.ok()) << want.status();
    const StatementProgram p = Parse(c.expr, c.extents, c.dtype);
    ASSERT_TRUE(p.single()) << c.expr;
    ExpectSameProblem(p.statements[0], *want);
    EXPECT_EQ(p.extents, want->extents);
    EXPECT_EQ(p.dtype, want->dtype);
    EXPECT_EQ(p.ExtentsString(), want->ExtentsString());
    EXPECT_EQ(p.ToString(), want->ToString());
    EXPECT_EQ(p.Fingerprint(), ProgramOf(*want).Fingerprint());
    EXPECT_EQ(p.Outputs(), std::vector<std::string>{want->output.tensor});
  }
  // A trailing ';' is a separator, not part of the statement.
  ExpectSameProblem(Parse("C[i,j] = A[i,j] + B[i,j];", "i=4,j=4").statements[0],
                    *ParseProblem("C[i,j] = A[i,j] + B[i,j]", "i=4,j=4"));
  const std::vector<Case> bad = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=4,n=4", "f32"},          // no extent of k
      {"C[m,n] += A[m,k] * B[k,n]", "m=4,n=4,k=4,q=2", "f32"},  // unknown index
      {"C[m,n] += A[m,k] * ", "m=4,n=4,k=4", "f32"},            // syntax
      {"\n\nC[m,n] += A[m,k] * B[k,n", "m=4,n=4,k=4", "f32"},   // position on line 3
      {"C[i,j] += A[i,k] * A[j,k]", "i=4,j=8,k=8", "f32"},      // two shapes
      {"C[i] = A[i]", "i=4", "bf16"},                           // dtype
      {"C[i] = A[i]", "i=0", "f32"},                            // extents
      {"C[i] = A[i] # \xc3\xa9", "i=4", "f32"},                 // byte in a comment
  };
  for (const Case& c : bad) {
    absl::StatusOr<Problem> want = ParseProblem(c.expr, c.extents, c.dtype);
    ASSERT_FALSE(want.ok()) << c.expr;
    EXPECT_EQ(Error(c.expr, c.extents, c.dtype), want.status().message()) << c.expr;
  }
}

TEST(StatementProgramTest, ProgramOfOneStatement) {
  const Problem mm = *ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=2,n=3,k=4", "f64");
  const StatementProgram p = ProgramOf(mm);
  EXPECT_TRUE(p.single());
  EXPECT_EQ(p.extents, mm.extents);
  EXPECT_EQ(p.dtype, DType::kF64);
  EXPECT_EQ(p.ToString(), "C[m,n] += A[m,k] * B[k,n]");
  EXPECT_EQ(p.ExtentsString(), "k=4,m=2,n=3");
  EXPECT_EQ(p.Fingerprint(), "T0[i0,i1] += T1[i0,i2] * T2[i2,i1] with i0=2,i1=3,i2=4 f64");
  EXPECT_EQ(p.RoleOf("C"), Role::kOutput);
  EXPECT_EQ(p.RoleOf("A"), Role::kInput);
}

// A chain of `n` copies: A1[i] = A0[i] + B0[i]; A2[i] = A1[i] + B1[i]; ...
std::string Chain(int n) {
  std::string out;
  for (int s = 0; s < n; ++s) absl::StrAppend(&out, "A", s + 1, "[i] = A", s, "[i] + B", s, "[i];");
  return out;
}

TEST(StatementProgramTest, ProgramErrors) {
  // No statement and no separator is no expression: ParseProblem's message, as for one.
  EXPECT_EQ(Error("", "i=4"),
            "expression column 1: empty expression (expected e.g. C[m,n] += A[m,k] * B[k,n])");
  EXPECT_EQ(Error(" ;;\n# only a comment\n\t;\n", "i=4"), "the program has no statement");
  EXPECT_EQ(Parse(Chain(kMaxStatements), "i=4").statements.size(), 16u);
  EXPECT_EQ(Error(Chain(kMaxStatements + 1), "i=4"),
            "the program has 17 statements; the limit is 16");
  std::string big = "C[i] = A[i]; D[i] = C[i] + B[i] # ";
  big.resize(kMaxProgramBytes + 1, 'x');
  EXPECT_EQ(Error(big, "i=4"), "the program is 16385 bytes long; the limit is 16384 bytes");
  // One statement keeps ParseProblem's limit and message.
  std::string one = "C[i] = A[i] # ";
  one.resize(kMaxProgramBytes + 1, 'x');
  EXPECT_EQ(Error(one, "i=4"), "expression is 16385 bytes long; the limit is 4096 bytes");
  EXPECT_EQ(Error(kMlp, "b=2048,d=1024,e=1024,f=4096,q=3"), "extent for unknown index 'q'");
  EXPECT_EQ(Error(kMlp, "b=2048,d=1024,e=1024"),
            "statement 1: index f has no extent (add f=<size> to the extents)");
  EXPECT_EQ(Error("H[b,f] = X[b,f] + B[b,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=2,f=3"),
            "statement 2: index e has no extent (add e=<size> to the extents)");
  EXPECT_EQ(Error("H[b,f] = X[b,f] + B[b,f]; Y[b,e] = H[b,f] *", "b=2,f=3,e=4"),
            absl::StrCat("statement 2: ",
                         ParseProblem(" Y[b,e] = H[b,f] *", "b=2,e=4,f=3").status().message()));
  EXPECT_EQ(Error(kMlp, kMlpExtents, "bf16"), "unknown dtype 'bf16' (expected f32 or f64)");
  EXPECT_EQ(Error(kMlp, "b=2048,d=-1"), ParseExtents("b=2048,d=-1").status().message());
  EXPECT_EQ(Error("A[i] = B[i] # \xc3\xa9\nC[i] = A[i] + D[i]", "i=4"),
            "program line 1, column 15: byte 0xC3 is not printable ASCII");
}

TEST(StatementProgramTest, DataflowErrors) {
  EXPECT_EQ(Error("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,d] * W2[d,e]", kMlpExtents),
            "tensor H is [2048,4096] in statement 1 but [2048,1024] in statement 2");
  EXPECT_EQ(Error("H[b,f] = X[b,d] * W1[d,f]\nY[b,e] = H[b] * W2[b,e]", kMlpExtents),
            "tensor H is [2048,4096] in statement 1 but [2048] in statement 2");
  EXPECT_EQ(Error("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = X[d,b] * W2[d,e]", kMlpExtents),
            "tensor X is [2048,1024] in statement 1 but [1024,2048] in statement 2");
  EXPECT_EQ(Error("H[b,f] = X[b,d] * W1[d,f]; H[b,f] = X[b,d] * W2[d,f]", "b=2048,d=1024,f=4096"),
            "tensor H is written by statements 1 and 2");
  EXPECT_EQ(Error("H[i] = A[i] + B[i]; G[i] = H[i] + B[i]; H[i] = G[i] + B[i]", "i=4"),
            "tensor H is written by statements 1 and 3");
  EXPECT_EQ(Error("C[i] = A[i] + B[i]; A[i] = D[i] + E[i]", "i=4"),
            "tensor A is read by statement 1 before statement 2 writes it");
  EXPECT_EQ(Error("H[b,f] += X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", kMlpExtents),
            "intermediate H must be written with '=' (statement 1 uses '+=')");
  // Long names are quoted as excerpts.
  const std::string name(300, 'L');
  const std::string message =
      Error(absl::StrCat(name, "[i] = A[i] + B[i]; ", name, "[i] = A[i] + C[i]"), "i=4");
  EXPECT_LT(message.size(), 200u) << message;
  EXPECT_NE(message.find(" is written by statements 1 and 2"), std::string::npos) << message;
}

// `text` with every identifier that is a key of `renames` replaced by its value.
std::string Rename(const std::string& text, const std::map<std::string, std::string>& renames) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = text[i];
    if (!(std::isalpha(c) || c == '_')) {
      size_t j = i + 1;  // a number runs on (its digits are no identifier)
      if (std::isdigit(c)) {
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      }
      out.append(text, i, j - i);
      i = j;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
      ++j;
    const std::string word = text.substr(i, j - i);
    const auto it = renames.find(word);
    out += it == renames.end() ? word : it->second;
    i = j;
  }
  return out;
}

struct Program {
  std::string expr, extents, dtype;
};

const std::vector<Program>& Programs() {
  static const auto* programs = new std::vector<Program>{
      {kMlp, kMlpExtents, "f32"},
      {"H[b,f] = X[b,d] * W1[d,f]\nH2[b,f] = H[b,f] + Bias[b,f]\nY[b,e] += H2[b,f] * W2[f,e]",
       kMlpExtents, "f64"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048", "f32"},
      {"T[i,j] = A[i,k] * B[k,j]; U[j,l] = T[i,j] * C[i,l] * D[l,j]; V[j] = U[j,l] * T[l,j]",
       "i=3,j=5,k=7,l=3", "f32"},
      {"P[x,y] = Q[y,x] + R[x,y]; S[x,y] = P[x,y] + Q[y,x]; O[x,z] = S[x,y] * Z[y,z]",
       "x=4,y=5,z=6", "f32"},
  };
  return *programs;
}

TEST(StatementProgramTest, FingerprintIsInvariantUnderRenaming) {
  std::mt19937 rng(20240607);
  for (const Program& prog : Programs()) {
    const StatementProgram base = Parse(prog.expr, prog.extents, prog.dtype);
    std::vector<std::string> tensors = base.Tensors();
    std::vector<std::string> indices;
    for (const auto& [index, extent] : base.extents) indices.push_back(index);
    for (int trial = 0; trial < 20; ++trial) {
      std::map<std::string, std::string> tensor_renames, index_renames;
      std::vector<std::string> new_tensors = tensors, new_indices = indices;
      if (trial % 2 == 0) {
        // A permutation of the program's own names (swaps and cycles).
        std::shuffle(new_tensors.begin(), new_tensors.end(), rng);
        std::shuffle(new_indices.begin(), new_indices.end(), rng);
      } else {
        // Fresh names, in a random order relative to the old ones (so sorting changes).
        std::vector<int> keys(tensors.size() + indices.size());
        for (size_t k = 0; k < keys.size(); ++k) keys[k] = static_cast<int>(k);
        std::shuffle(keys.begin(), keys.end(), rng);
        for (size_t k = 0; k < tensors.size(); ++k)
          new_tensors[k] = absl::StrCat("Ten", keys[k], "_", trial);
        for (size_t k = 0; k < indices.size(); ++k)
          new_indices[k] = absl::StrCat("ix", keys[tensors.size() + k], "_", trial);
      }
      for (size_t k = 0; k < tensors.size(); ++k) tensor_renames[tensors[k]] = new_tensors[k];
      for (size_t k = 0; k < indices.size(); ++k) index_renames[indices[k]] = new_indices[k];
      std::map<std::string, std::string> all = tensor_renames;
      all.insert(index_renames.begin(), index_renames.end());
      const std::string expr = Rename(prog.expr, all);
      const StatementProgram renamed = Parse(expr, Rename(prog.extents, index_renames), prog.dtype);
      EXPECT_EQ(renamed.Fingerprint(), base.Fingerprint()) << prog.expr << "\nrenamed: " << expr;
      EXPECT_EQ(renamed.ToString(), Rename(base.ToString(), all));
    }
  }
}

TEST(StatementProgramTest, FingerprintChangesWithAnyOtherChange) {
  const std::vector<Program> variants = {
      {kMlp, kMlpExtents, "f32"},
      // An extent.
      {kMlp, "b=2048,d=1024,e=1024,f=2048", "f32"},
      {kMlp, "b=2048,d=1024,e=512,f=4096", "f32"},
      // The dtype.
      {kMlp, kMlpExtents, "f64"},
      // '=' vs '+='.
      {"H[b,f] = X[b,d] * W1[d,f]; Y[b,e] += H[b,f] * W2[f,e]", kMlpExtents, "f32"},
      // An access's index order.
      {"H[b,f] = X[b,d] * W1[f,d]; Y[b,e] = H[b,f] * W2[f,e]", kMlpExtents, "f32"},
      // Which tensor a statement reads.
      {"H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = G[b,f] * W2[f,e]", kMlpExtents, "f32"},
      // The operator, '+' vs '*'.
      {"H[b,f] = X[b,f] + Bias[b,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=2,e=3,f=4", "f32"},
      {"H[b,f] = X[b,f] * Bias[b,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=2,e=3,f=4", "f32"},
      // Statement order.
      {"C[m,n] = A[m,k] * B[k,n]; E[m,n] = D[m,n] + F[m,n]", "m=2,n=3,k=4", "f32"},
      {"E[m,n] = D[m,n] + F[m,n]; C[m,n] = A[m,k] * B[k,n]", "m=2,n=3,k=4", "f32"},
      // One statement less.
      {"H[b,f] = X[b,d] * W1[d,f]", "b=2048,d=1024,f=4096", "f32"},
  };
  std::set<std::string> seen;
  for (const Program& v : variants) {
    const std::string fp = Parse(v.expr, v.extents, v.dtype).Fingerprint();
    EXPECT_TRUE(seen.insert(fp).second)
        << v.expr << " " << v.extents << " " << v.dtype << ": " << fp;
  }
}

}  // namespace
}  // namespace meshtune::ir
