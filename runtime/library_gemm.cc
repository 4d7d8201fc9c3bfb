#include "runtime/library_gemm.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/fill.h"
#include "runtime/mpi_comm.h"
#include "third_party/scalapack_api.h"

namespace meshtune::runtime {

namespace {

// One matrix of ScaLAPACK's column-major view of a row-major tensor [d0, d1]: d1 rows, d0
// columns, element (r, c) being the tensor's [c, r]; this rank's block-cyclic part of it.
template <typename T>
struct LocalMatrix {
  int rows = 0, cols = 0;  // global (the view's)
  int local_rows = 0, local_cols = 0;
  std::vector<T> data;  // column-major, leading dimension max(1, local_rows)
  int desc[9] = {};
  int row = 0, col = 0, prow = 1, pcol = 1, nb = 1;

  int GlobalRow(int li) const { return ((li / nb) * prow + row) * nb + li % nb; }
  int GlobalCol(int lj) const { return ((lj / nb) * pcol + col) * nb + lj % nb; }
  int lld() const { return std::max(1, local_rows); }
  // The tensor's row-major index of local element (li, lj).
  int64_t TensorIndex(int li, int lj) const {
    return static_cast<int64_t>(GlobalCol(lj)) * rows + GlobalRow(li);
  }
};

template <typename T>
LocalMatrix<T> Distribute(int64_t d0, int64_t d1, const LibraryGemmConfig& g, int ctx, int row,
                          int col) {
  LocalMatrix<T> x;
  x.rows = static_cast<int>(d1);
  x.cols = static_cast<int>(d0);
  x.row = row;
  x.col = col;
  x.prow = g.prow;
  x.pcol = g.pcol;
  x.nb = g.nb;
  const int zero = 0;
  x.local_rows = numroc_(&x.rows, &x.nb, &row, &zero, &x.prow);
  x.local_cols = numroc_(&x.cols, &x.nb, &col, &zero, &x.pcol);
  x.data.assign(static_cast<size_t>(x.lld()) * std::max(0, x.local_cols), T(0));
  const int lld = x.lld();
  int info = 0;
  descinit_(x.desc, &x.rows, &x.cols, &x.nb, &x.nb, &zero, &zero, &ctx, &lld, &info);
  return x;
}

template <typename T>
void Fill(LocalMatrix<T>& x, uint64_t seed, const std::string& tensor) {
  for (int lj = 0; lj < x.local_cols; ++lj) {
    for (int li = 0; li < x.local_rows; ++li) {
      x.data[static_cast<size_t>(li) + static_cast<size_t>(lj) * x.lld()] =
          static_cast<T>(ElementValue(seed, tensor, x.TensorIndex(li, lj)));
    }
  }
}

void Gemm(const char* ta, const char* tb, const int* m, const int* n, const int* k,
          const float* alpha, const LocalMatrix<float>& a, const LocalMatrix<float>& b,
          const float* beta, LocalMatrix<float>& c) {
  const int one = 1;
  psgemm_(ta, tb, m, n, k, alpha, a.data.data(), &one, &one, a.desc, b.data.data(), &one, &one,
          b.desc, beta, c.data.data(), &one, &one, c.desc);
}

void Gemm(const char* ta, const char* tb, const int* m, const int* n, const int* k,
          const double* alpha, const LocalMatrix<double>& a, const LocalMatrix<double>& b,
          const double* beta, LocalMatrix<double>& c) {
  const int one = 1;
  pdgemm_(ta, tb, m, n, k, alpha, a.data.data(), &one, &one, a.desc, b.data.data(), &one, &one,
          b.desc, beta, c.data.data(), &one, &one, c.desc);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The error of the lowest rank of `comm` that has one ("" when none has), on every rank.
std::string FirstError(const std::string& mine, MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int me = mine.empty() ? size : rank, first = size;
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return "";
  int length = rank == first ? static_cast<int>(mine.size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string out = rank == first ? mine : std::string(static_cast<size_t>(length), '\0');
  MPI_Bcast(out.data(), length, MPI_CHAR, first, comm);
  return out;
}

template <typename T>
LibraryGemmRun Run(const ProblemSpec& problem, const GemmForm& f, const LibraryGemmConfig& g,
                   int reps, int warmup, uint64_t seed, MPI_Comm comm) {
  // BLACS over `comm` (not necessarily MPI_COMM_WORLD), row-major grid.
  int handle = Csys2blacs_handle(comm);
  int ctx = handle, rows = 0, cols = 0, row = 0, col = 0;
  Cblacs_gridinit(&ctx, "Row", g.prow, g.pcol);
  Cblacs_gridinfo(ctx, &rows, &cols, &row, &col);
  // Row-major C [m, n] is the column-major n x m matrix Ct = op(B) op(A) (see the header).
  LocalMatrix<T> a = f.a_transposed ? Distribute<T>(f.k, f.m, g, ctx, row, col)
                                    : Distribute<T>(f.m, f.k, g, ctx, row, col);
  LocalMatrix<T> b = f.b_transposed ? Distribute<T>(f.n, f.k, g, ctx, row, col)
                                    : Distribute<T>(f.k, f.n, g, ctx, row, col);
  LocalMatrix<T> c = Distribute<T>(f.m, f.n, g, ctx, row, col);
  Fill(a, seed, f.a);
  Fill(b, seed, f.b);
  const int m = static_cast<int>(f.n), n = static_cast<int>(f.m), k = static_cast<int>(f.k);
  const T alpha = 1, beta = f.accumulate ? 1 : 0;
  const char* op_b = f.b_transposed ? "T" : "N";
  const char* op_a = f.a_transposed ? "T" : "N";
  LibraryGemmRun out;
  for (int r = 0; r < warmup + reps; ++r) {
    if (f.accumulate) Fill(c, seed, f.c);
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    Gemm(op_b, op_a, &m, &n, &k, &alpha, b, a, &beta, c);
    double dt = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (r >= warmup) out.repetitions.push_back(slowest);
  }
  out.seconds = Median(out.repetitions);
  // The oracle: this rank's elements of C, then that every element is held.
  HeldOutput held;
  held.slots = static_cast<int64_t>(c.local_rows) * c.local_cols;
  held.global = [&c](int64_t i) {
    const int li = static_cast<int>(i % std::max(1, c.local_rows));
    const int lj = static_cast<int>(i / std::max(1, c.local_rows));
    return c.TensorIndex(li, lj);
  };
  held.value = [&c](int64_t i) {
    const int li = static_cast<int>(i % std::max(1, c.local_rows));
    const int lj = static_cast<int>(i / std::max(1, c.local_rows));
    return static_cast<double>(c.data[static_cast<size_t>(li) + static_cast<size_t>(lj) * c.lld()]);
  };
  const double tolerance = sizeof(T) == 4 ? 2e-4 : 1e-10;
  out.error = FirstError(CheckHeldValues(problem, seed, held, tolerance,
                                         absl::StrCat("grid row ", row, ", column ", col)),
                         comm);
  if (out.error.empty()) {
    std::unique_ptr<Comm> checking = NewMpiComm(comm, {g.prow, g.pcol});
    out.error = CheckCoverage(problem, held, tolerance, *checking);
  }
  Cblacs_gridexit(ctx);
  Cfree_blacs_system_handle(handle);
  return out;
}

}  // namespace

LibraryGemmRun RunLibraryGemm(const ProblemSpec& problem, const GemmForm& form, int dtype_bytes,
                              const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                              MPI_Comm comm) {
  return dtype_bytes == 8 ? Run<double>(problem, form, config, reps, warmup, seed, comm)
                          : Run<float>(problem, form, config, reps, warmup, seed, comm);
}

}  // namespace meshtune::runtime
