// A serial reference of a program of statements for the test applications: the
// statements parsed here and evaluated element by element on a fixed fill, nothing of
// meshtune's (tests/plan_program_app.cc, tests/program_kernel_app.cc).
#ifndef MESHTUNE_TESTS_PROGRAM_REFERENCE_H_
#define MESHTUNE_TESTS_PROGRAM_REFERENCE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace meshtune::testing {

struct Access {
  std::string tensor;
  std::vector<std::string> indices;
};

struct Statement {
  Access output;
  std::vector<Access> operands;
  bool accumulate = false, sum = false;
};

inline std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

// "A[i,j]" (spaces allowed).
inline Access ParseAccess(const std::string& text) {
  Access a;
  const std::string t = Trim(text);
  const size_t open = t.find('[');
  a.tensor = Trim(t.substr(0, open));
  std::stringstream in(t.substr(open + 1, t.find(']') - open - 1));
  for (std::string i; std::getline(in, i, ',');) a.indices.push_back(Trim(i));
  return a;
}

// The statements of `expr`, separated by ';' or newlines: "OUT[..] = A[..] * B[..]", "+="
// to accumulate, '+' between operands to add them.
inline std::vector<Statement> ParseProgram(const std::string& expr) {
  std::vector<Statement> out;
  std::string text = expr;
  for (char& c : text) c = c == '\n' ? ';' : c;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line, ';');) {
    if (Trim(line).empty()) continue;
    Statement s;
    const size_t eq = line.find('=');
    s.accumulate = eq > 0 && line[eq - 1] == '+';
    s.output = ParseAccess(line.substr(0, s.accumulate ? eq - 1 : eq));
    const std::string rhs = line.substr(eq + 1);
    s.sum = rhs.find('+') != std::string::npos;
    std::stringstream parts(rhs);
    for (std::string p; std::getline(parts, p, s.sum ? '+' : '*');) {
      s.operands.push_back(ParseAccess(p));
    }
    out.push_back(s);
  }
  return out;
}

inline std::map<std::string, int64_t> ParseExtents(const std::string& text) {
  std::map<std::string, int64_t> e;
  std::stringstream in(text);
  for (std::string kv; std::getline(in, kv, ',');) {
    e[Trim(kv.substr(0, kv.find('=')))] = std::stoll(kv.substr(kv.find('=') + 1));
  }
  return e;
}

// A global element's value: small, distinct per tensor, exact in f32.
inline double Value(const std::string& tensor, const std::vector<int64_t>& idx) {
  int64_t h = 0;
  for (char c : tensor) h = h * 31 + c;
  for (int64_t i : idx) h = h * 7 + i * 3;
  return static_cast<double>(((h % 11) + 11) % 11 - 5) / 4.0;
}

inline int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

// Calls `f(multi-index)` for every point of `shape`, row-major.
inline void ForEach(const std::vector<int64_t>& shape,
                    const std::function<void(const std::vector<int64_t>&)>& f) {
  const int64_t n = Elements(shape);
  std::vector<int64_t> idx(shape.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = i;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      idx[d] = r % shape[d];
      r /= shape[d];
    }
    f(idx);
  }
}

inline int64_t Linear(const std::vector<int64_t>& shape, const std::vector<int64_t>& idx) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d) at = at * shape[d] + idx[d];
  return at;
}

// The serial program: every tensor's values, row-major, the inputs from Value.
struct Reference {
  // Every tensor once, in order of first appearance (each statement's output, then its
  // operands).
  std::vector<std::string> order;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, bool> written, accumulated;

  Reference(const std::vector<Statement>& program, const std::map<std::string, int64_t>& extents) {
    auto shape_of = [&](const Access& a) {
      std::vector<int64_t> s;
      for (const std::string& i : a.indices) s.push_back(extents.at(i));
      return s;
    };
    auto appear = [this](const std::string& t) {
      for (const std::string& seen : order) {
        if (seen == t) return;
      }
      order.push_back(t);
    };
    for (const Statement& s : program) {
      appear(s.output.tensor);
      for (const Access& a : s.operands) appear(a.tensor);
    }
    for (const Statement& s : program) {
      written[s.output.tensor] = true;
      accumulated[s.output.tensor] = s.accumulate;
      shapes[s.output.tensor] = shape_of(s.output);
      for (const Access& a : s.operands) shapes[a.tensor] = shape_of(a);
    }
    for (const auto& [t, shape] : shapes) {
      if (written[t] && !accumulated[t]) {
        values[t].assign(Elements(shape), 0.0);
        continue;
      }
      ForEach(shape,
              [&, t = t](const std::vector<int64_t>& idx) { values[t].push_back(Value(t, idx)); });
    }
    for (const Statement& s : program) Evaluate(s, extents);
  }

  void Evaluate(const Statement& s, const std::map<std::string, int64_t>& extents) {
    std::vector<std::string> all;  // every index of the statement
    std::vector<int64_t> domain;
    auto add = [&](const Access& a) {
      for (const std::string& i : a.indices) {
        bool seen = false;
        for (const std::string& j : all) seen = seen || j == i;
        if (!seen) {
          all.push_back(i);
          domain.push_back(extents.at(i));
        }
      }
    };
    add(s.output);
    for (const Access& a : s.operands) add(a);
    auto at = [&](const Access& a, const std::vector<int64_t>& point) {
      std::vector<int64_t> idx;
      for (const std::string& i : a.indices) {
        for (size_t j = 0; j < all.size(); ++j) {
          if (all[j] == i) idx.push_back(point[j]);
        }
      }
      return Linear(shapes[a.tensor], idx);
    };
    ForEach(domain, [&](const std::vector<int64_t>& point) {
      double v = s.sum ? 0.0 : 1.0;
      for (const Access& a : s.operands) {
        const double x = values[a.tensor][at(a, point)];
        v = s.sum ? v + x : v * x;
      }
      values[s.output.tensor][at(s.output, point)] += v;
    });
  }
};

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_PROGRAM_REFERENCE_H_
