// The local kernels against naive loops: GenericKernel over strided tiles (products, sums,
// broadcast operands, scalars, empty tiles) and GemmKernel over an enumerated set of GEMM
// shapes, operand layouts (plain, transposed, padded rows, offset bases) and index orders,
// for f32 and f64; GemmKernel refuses (and leaves the output alone) where BLAS cannot apply.
#include "runtime/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace meshtune::runtime {
namespace {

// A tile operand inside a buffer of its own: `base` elements of padding before the tile,
// strides per tile index. Unused elements hold NaN, so a kernel that reads outside the tile
// poisons its result.
template <typename T>
struct Strided {
  std::vector<T> data;
  int64_t base = 0;
  std::vector<int64_t> strides;

  TileOperand<T> Tile() { return TileOperand<T>{data.data() + base, strides}; }
  const T& At(const std::vector<int64_t>& idx) const { return data[Offset(idx)]; }
  int64_t Offset(const std::vector<int64_t>& idx) const {
    int64_t o = base;
    for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
    return o;
  }
};

// An operand of the tile `extents` with `strides`, `base` elements of padding first; every
// element the tile reaches gets a distinct value, the others NaN (or 0 with `nan_pad` false,
// for outputs whose padding is compared exactly).
template <typename T>
Strided<T> MakeOperand(const std::vector<int64_t>& extents, std::vector<int64_t> strides,
                       int64_t base, int salt, bool nan_pad = true) {
  Strided<T> s;
  s.base = base;
  s.strides = std::move(strides);
  int64_t last = base;
  for (size_t d = 0; d < extents.size(); ++d) {
    if (extents[d] > 0) last += (extents[d] - 1) * s.strides[d];
  }
  s.data.assign(last + 3, nan_pad ? std::numeric_limits<T>::quiet_NaN() : T(0));
  // Every point of the tile: small exact values (multiples of 1/8), salted per operand.
  std::vector<int64_t> idx(extents.size(), 0);
  for (int64_t n = 0;; ++n) {
    for (int64_t e : extents) {
      if (e <= 0) return s;
    }
    s.data[s.Offset(idx)] = static_cast<T>(((n * 7 + salt * 3) % 17 - 8) / 8.0);
    int d = static_cast<int>(extents.size()) - 1;
    while (d >= 0 && ++idx[d] == extents[d]) idx[d--] = 0;
    if (d < 0) return s;
  }
}

// out += prod(in) (or sum) over every point of `extents`, one point at a time in double;
// returns the expected contents of out's whole buffer.
template <typename T>
std::vector<double> NaiveKernel(const std::vector<int64_t>& extents, const Strided<T>& out,
                                const std::vector<Strided<T>>& in, bool sum) {
  std::vector<double> expected(out.data.begin(), out.data.end());
  for (int64_t e : extents) {
    if (e <= 0) return expected;
  }
  std::vector<int64_t> idx(extents.size(), 0);
  while (true) {
    double v = sum ? 0.0 : 1.0;
    for (const Strided<T>& op : in) v = sum ? v + op.At(idx) : v * op.At(idx);
    expected[out.Offset(idx)] += v;
    int d = static_cast<int>(extents.size()) - 1;
    while (d >= 0 && ++idx[d] == extents[d]) idx[d--] = 0;
    if (d < 0) return expected;
  }
}

// Compares every element of `got` with `want` (NaN equals NaN: untouched padding).
template <typename T>
void ExpectBufferNear(const std::vector<T>& got, const std::vector<double>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i]))
          << what << ": element " << i << " = " << got[i] << ", expected untouched";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << ": element " << i;
    }
  }
}

template <typename T>
class KernelsTest : public ::testing::Test {};
using DataTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelsTest, DataTypes);

TYPED_TEST(KernelsTest, GenericKernelMatchesTheNaiveLoop) {
  using T = TypeParam;
  struct Case {
    std::string name;
    std::vector<int64_t> extents;
    std::vector<int64_t> out_strides;
    int64_t out_base;
    std::vector<std::vector<int64_t>> in_strides;
    std::vector<int64_t> in_bases;
    bool sum;
  };
  const std::vector<Case> cases = {
      // C[i,j] += A[i,k] * B[k,j] over (i, j, k), row-major with padded rows and offsets.
      {"matmul", {3, 4, 5}, {6, 1, 0}, 2, {{7, 0, 1}, {0, 1, 5}}, {1, 0}, false},
      // The same contraction with k outermost and A transposed.
      {"matmul k first", {5, 3, 4}, {0, 4, 1}, 0, {{3, 1, 0}, {4, 0, 1}}, {3, 2}, false},
      // A dot product: the output does not move at all.
      {"dot", {7}, {0}, 1, {{1}, {2}}, {0, 1}, false},
      // An element-wise sum of three operands, one broadcast along i.
      {"sum of three", {2, 3}, {3, 1}, 0, {{3, 1}, {1, 2}, {0, 1}}, {0, 4, 1}, true},
      // A single operand summed into a transposed output (a copy).
      {"transposed copy", {3, 2}, {1, 3}, 1, {{2, 1}}, {0}, true},
      // Four dims, an outer product with a column-major operand.
      {"4d", {2, 2, 3, 2}, {12, 6, 2, 1}, 0, {{1, 2, 0, 0}, {0, 0, 2, 1}}, {0, 1}, false},
      // A scalar tile: out += a * b.
      {"scalar", {}, {}, 1, {{}, {}}, {2, 0}, false},
      {"scalar sum", {}, {}, 0, {{}, {}, {}}, {0, 1, 2}, true},
  };
  for (const Case& c : cases) {
    Strided<T> out = MakeOperand<T>(c.extents, c.out_strides, c.out_base, 1);
    std::vector<Strided<T>> in;
    std::vector<TileOperand<T>> tiles;
    for (size_t i = 0; i < c.in_strides.size(); ++i) {
      in.push_back(
          MakeOperand<T>(c.extents, c.in_strides[i], c.in_bases[i], static_cast<int>(i) + 2));
    }
    for (Strided<T>& s : in) tiles.push_back(s.Tile());
    const std::vector<double> want = NaiveKernel(c.extents, out, in, c.sum);
    GenericKernel<T>(c.extents, out.Tile(), tiles, c.sum);
    ExpectBufferNear(out.data, want, c.name);
  }
}

TYPED_TEST(KernelsTest, GenericKernelOverAnEmptyTileChangesNothing) {
  using T = TypeParam;
  const std::vector<int64_t> extents = {3, 0, 2};
  Strided<T> out = MakeOperand<T>({3, 1, 2}, {2, 0, 1}, 0, 1);
  Strided<T> a = MakeOperand<T>({3, 1, 2}, {2, 0, 1}, 0, 2);
  const std::vector<T> before = out.data;
  GenericKernel<T>(extents, out.Tile(), {a.Tile()}, false);
  ExpectBufferNear(out.data, std::vector<double>(before.begin(), before.end()), "empty tile");
}

// One GEMM layout: C[i,j] += sum_k A[i,k] * B[k,j] with (m, n, k) = extents at positions
// (pi, pj, pk) of the tile, A stored [i][k] or transposed, B [k][j] or transposed, rows
// padded by `pad` and every buffer offset by a few elements.
struct GemmCase {
  int64_t m, n, k;
  int pi, pj, pk;  // positions of i, j, k in the tile's extents
  bool a_trans, b_trans;
  int64_t pad;
};

std::string Describe(const GemmCase& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " order=" + std::to_string(c.pi) + std::to_string(c.pj) + std::to_string(c.pk) +
         (c.a_trans ? " A^T" : " A") + (c.b_trans ? " B^T" : " B") +
         " pad=" + std::to_string(c.pad);
}

// The strides of an operand over the tile: `outer` for the index at `po`, `inner` for `pi`.
std::vector<int64_t> Strides(int po, int64_t outer, int pi, int64_t inner) {
  std::vector<int64_t> s(3, 0);
  s[po] = outer;
  s[pi] = inner;
  return s;
}

// Row-major strides over the tile's indices for an operand whose dims are `dims` (tile
// positions, outermost first); 0 for tile indices it does not use.
std::vector<int64_t> StridesFor(const std::vector<int>& dims, const std::vector<int64_t>& extents) {
  std::vector<int64_t> strides(extents.size(), 0);
  int64_t s = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    strides[dims[d]] = s;
    s *= extents[dims[d]];
  }
  return strides;
}

// The whole space of two-operand contractions over four indices (16, 16, 16 and 3): each
// index in out and a, out and b, a and b, all three, a only or out only (6^4 structures),
// each operand's dims in a seeded order or its reverse. Where ContractionGemm takes the
// tile, out must equal the naive loop (+=, and = with overwrite where it applies); where it
// refuses, out must be untouched. The structures of GEMMs and batched GEMMs must be taken.
TYPED_TEST(KernelsTest, ContractionGemmMatchesTheNaiveLoopOverEveryIndexStructure) {
  using T = TypeParam;
  const std::vector<int64_t> extents = {16, 16, 16, 3};
  // Membership per index: bit 0 out, bit 1 a, bit 2 b.
  const int kinds[] = {3, 5, 6, 7, 2, 1};
  uint64_t rng = 12345;
  auto next = [&rng] {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>(rng >> 33);
  };
  int taken = 0, structures = 0;
  for (int code = 0; code < 6 * 6 * 6 * 6; ++code) {
    std::vector<int> member(4);
    for (int p = 0, c = code; p < 4; ++p, c /= 6) member[p] = kinds[c % 6];
    std::vector<int> od, ad, bd;
    for (int p = 0; p < 4; ++p) {
      if (member[p] & 1) od.push_back(p);
      if (member[p] & 2) ad.push_back(p);
      if (member[p] & 4) bd.push_back(p);
    }
    if (od.empty() || ad.empty() || bd.empty()) continue;
    ++structures;
    for (int variant = 0; variant < 2; ++variant) {
      for (std::vector<int>* d : {&od, &ad, &bd}) {
        for (size_t i = d->size(); i > 1; --i) std::swap((*d)[i - 1], (*d)[next() % i]);
        if (variant == 1) std::reverse(d->begin(), d->end());
      }
      for (const bool overwrite : {false, true}) {
        Strided<T> out = MakeOperand<T>(extents, StridesFor(od, extents), 1, 1);
        Strided<T> a = MakeOperand<T>(extents, StridesFor(ad, extents), 0, 2);
        Strided<T> b = MakeOperand<T>(extents, StridesFor(bd, extents), 2, 3);
        Strided<T> start = out;
        if (overwrite) {
          // The expected result of out = a * b: the touched elements start from 0.
          std::vector<int64_t> idx(4, 0);
          for (idx[0] = 0; idx[0] < 16; ++idx[0])
            for (idx[1] = 0; idx[1] < 16; ++idx[1])
              for (idx[2] = 0; idx[2] < 16; ++idx[2])
                for (idx[3] = 0; idx[3] < 3; ++idx[3]) start.data[start.Offset(idx)] = 0;
        }
        const std::vector<double> want = NaiveKernel<T>(extents, start, {a, b}, false);
        const std::vector<T> before = out.data;
        const bool ok = ContractionGemm<T>(extents, out.Tile(), a.Tile(), b.Tile(), overwrite);
        const std::string what = "structure " + std::to_string(code) + " variant " +
                                 std::to_string(variant) + (overwrite ? " (=)" : " (+=)");
        if (!ok) {
          ExpectBufferNear(out.data, std::vector<double>(before.begin(), before.end()), what);
          continue;
        }
        ++taken;
        // An index out does not use is summed over by a loop: = applies to its first pass
        // only, which the loop accounts for; the result is the same either way.
        ExpectBufferNear(out.data, want, what);
      }
    }
  }
  // 6^4, less those without out (2^4), without a (2^4) or without b (3^4), plus those
  // without out and b (1) or without a and b (1), counted twice.
  EXPECT_EQ(structures, 1296 - 16 - 16 - 81 + 1 + 1);
  EXPECT_GT(taken, 0);
  // A plain GEMM (i: out a, j: out b, k: a b, l: all three — a batch) is always taken.
  {
    const std::vector<int> od = {3, 0, 1}, ad = {3, 0, 2}, bd = {3, 2, 1};
    Strided<T> out = MakeOperand<T>(extents, StridesFor(od, extents), 0, 1);
    Strided<T> a = MakeOperand<T>(extents, StridesFor(ad, extents), 0, 2);
    Strided<T> b = MakeOperand<T>(extents, StridesFor(bd, extents), 0, 3);
    const std::vector<double> want = NaiveKernel<T>(extents, out, {a, b}, false);
    EXPECT_TRUE(ContractionGemm<T>(extents, out.Tile(), a.Tile(), b.Tile()));
    ExpectBufferNear(out.data, want, "batched GEMM");
  }
}

TYPED_TEST(KernelsTest, GemmKernelMatchesATripleLoop) {
  using T = TypeParam;
  std::vector<GemmCase> cases;
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {1, 4, 3}, {3, 1, 2}, {4, 5, 1},
                                                    {3, 4, 5}, {7, 2, 6}, {2, 6, 1}, {5, 3, 8}};
  const std::vector<std::vector<int>> orders = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
  for (const std::vector<int64_t>& s : shapes) {
    for (const std::vector<int>& o : orders) {
      for (int layout = 0; layout < 4; ++layout) {
        for (int64_t pad : {0, 2}) {
          cases.push_back(
              {s[0], s[1], s[2], o[0], o[1], o[2], (layout & 1) != 0, (layout & 2) != 0, pad});
        }
      }
    }
  }
  for (const GemmCase& c : cases) {
    std::vector<int64_t> extents(3);
    extents[c.pi] = c.m;
    extents[c.pj] = c.n;
    extents[c.pk] = c.k;
    // Output padding is compared exactly (0 stays 0), inputs' padding is NaN.
    Strided<T> out =
        MakeOperand<T>(extents, Strides(c.pi, c.n + c.pad, c.pj, 1), 3, 1, /*nan_pad=*/false);
    Strided<T> a = c.a_trans ? MakeOperand<T>(extents, Strides(c.pk, c.m + c.pad, c.pi, 1), 1, 2)
                             : MakeOperand<T>(extents, Strides(c.pi, c.k + c.pad, c.pk, 1), 1, 2);
    Strided<T> b = c.b_trans ? MakeOperand<T>(extents, Strides(c.pj, c.k + c.pad, c.pk, 1), 2, 3)
                             : MakeOperand<T>(extents, Strides(c.pk, c.n + c.pad, c.pj, 1), 2, 3);
    // The triple loop, written out for this layout.
    std::vector<double> want(out.data.begin(), out.data.end());
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const double av = c.a_trans ? a.data[a.base + k * (c.m + c.pad) + i]
                                      : a.data[a.base + i * (c.k + c.pad) + k];
          const double bv = c.b_trans ? b.data[b.base + j * (c.k + c.pad) + k]
                                      : b.data[b.base + k * (c.n + c.pad) + j];
          acc += av * bv;
        }
        want[out.base + i * (c.n + c.pad) + j] += acc;
      }
    }
    ASSERT_TRUE(GemmKernel<T>(extents, c.pi, c.pj, c.pk, out.Tile(), a.Tile(), b.Tile()))
        << Describe(c);
    ExpectBufferNear(out.data, want, Describe(c));
    if (::testing::Test::HasFailure()) return;  // one failing layout is enough to read
  }
}

TYPED_TEST(KernelsTest, GemmKernelRefusesLayoutsBlasCannotTakeAndLeavesTheOutput) {
  using T = TypeParam;
  const std::vector<int64_t> extents = {3, 4, 5};  // i, j, k
  struct Case {
    std::string name;
    std::vector<int64_t> out_strides, a_strides, b_strides;
  };
  const std::vector<Case> cases = {
      // C column-major: its minor dim (j) is not contiguous.
      {"C column-major", {1, 3, 0}, {5, 0, 1}, {0, 1, 4}},
      // A strided along both i and k.
      {"A strided both ways", {4, 1, 0}, {10, 0, 2}, {0, 1, 4}},
      // B strided along both k and j.
      {"B strided both ways", {4, 1, 0}, {5, 0, 1}, {0, 2, 8}},
      // Rows of C overlap (leading dim shorter than a row).
      {"C rows overlap", {2, 1, 0}, {5, 0, 1}, {0, 1, 4}},
      // A does not depend on i (a broadcast operand): no leading dim fits.
      {"A broadcast along i", {4, 1, 0}, {0, 0, 1}, {0, 1, 4}},
      // C does not depend on i (a reduction over i is not a GEMM).
      {"C reduced over i", {0, 1, 0}, {5, 0, 1}, {0, 1, 4}},
  };
  for (const Case& c : cases) {
    Strided<T> out = MakeOperand<T>(extents, c.out_strides, 1, 1);
    Strided<T> a = MakeOperand<T>(extents, c.a_strides, 0, 2);
    Strided<T> b = MakeOperand<T>(extents, c.b_strides, 0, 3);
    const std::vector<T> before = out.data;
    EXPECT_FALSE(GemmKernel<T>(extents, 0, 1, 2, out.Tile(), a.Tile(), b.Tile())) << c.name;
    ExpectBufferNear(out.data, std::vector<double>(before.begin(), before.end()), c.name);
    // The generic fallback computes the same tile.
    const std::vector<double> want = NaiveKernel<T>(extents, out, {a, b}, false);
    GenericKernel<T>(extents, out.Tile(), {a.Tile(), b.Tile()}, false);
    ExpectBufferNear(out.data, want, c.name + " (generic)");
  }
}

}  // namespace
}  // namespace meshtune::runtime
