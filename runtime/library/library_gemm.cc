#include "runtime/library/library_gemm.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/median.h"
#include "runtime/fill.h"
#include "runtime/mpi_comm.h"
#include "third_party/scalapack_api.h"

namespace meshtune::runtime {

absl::StatusOr<std::unique_ptr<LibraryGemmCall>> LibraryGemmCall::Create(
    const GemmForm& form, int dtype_bytes, const LibraryGemmConfig& config, MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  if (config.prow < 1 || config.pcol < 1 || config.nb < 1 || config.prow * config.pcol != size) {
    return absl::InvalidArgumentError(absl::StrCat("the library's grid ", ConfigText(config),
                                                   " does not fit a communicator of ", size,
                                                   " ranks"));
  }
  if (absl::Status s = CheckLibraryExtents(form); !s.ok()) return s;
  std::unique_ptr<LibraryGemmCall> call(new LibraryGemmCall());
  call->form_ = form;
  call->dtype_bytes_ = dtype_bytes;
  // BLACS over `comm` (not necessarily MPI_COMM_WORLD), row-major grid.
  call->handle_ = Csys2blacs_handle(comm);
  call->context_ = call->handle_;
  int rows = 0, cols = 0, row = 0, col = 0;
  Cblacs_gridinit(&call->context_, "Row", config.prow, config.pcol);
  Cblacs_gridinfo(call->context_, &rows, &cols, &row, &col);
  const std::pair<int64_t, int64_t> shapes[3] = {
      {form.m, form.n},
      form.a_transposed ? std::make_pair(form.k, form.m) : std::make_pair(form.m, form.k),
      form.b_transposed ? std::make_pair(form.n, form.k) : std::make_pair(form.k, form.n)};
  for (int t = 0; t < 3; ++t) {
    CyclicPart& p = call->parts_[t];
    p = CyclicPartOf(shapes[t].first, shapes[t].second, config, row, col);
    const int m = static_cast<int>(p.rows), n = static_cast<int>(p.cols), nb = config.nb, zero = 0;
    const int lld = static_cast<int>(p.lld());
    int info = 0;
    descinit_(call->desc_[t], &m, &n, &nb, &nb, &zero, &zero, &call->context_, &lld, &info);
  }
  return call;
}

LibraryGemmCall::~LibraryGemmCall() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  Cblacs_gridexit(context_);
  Cfree_blacs_system_handle(handle_);
}

void LibraryGemmCall::Run(void* c, const void* a, const void* b) const {
  const int m = static_cast<int>(form_.m), n = static_cast<int>(form_.n);
  const int k = static_cast<int>(form_.k), one = 1;
  const char* op_a = form_.a_transposed ? "T" : "N";
  const char* op_b = form_.b_transposed ? "T" : "N";
  if (dtype_bytes_ == 8) {
    const double alpha = 1, beta = form_.accumulate ? 1 : 0;
    pdgemm_(op_a, op_b, &m, &n, &k, &alpha, static_cast<const double*>(a), &one, &one, desc_[1],
            static_cast<const double*>(b), &one, &one, desc_[2], &beta, static_cast<double*>(c),
            &one, &one, desc_[0]);
  } else {
    const float alpha = 1, beta = form_.accumulate ? 1 : 0;
    psgemm_(op_a, op_b, &m, &n, &k, &alpha, static_cast<const float*>(a), &one, &one, desc_[1],
            static_cast<const float*>(b), &one, &one, desc_[2], &beta, static_cast<float*>(c), &one,
            &one, desc_[0]);
  }
}

namespace {

// The tensor's row-major index of local element (li, lj) of `p`.
int64_t TensorIndex(const CyclicPart& p, int64_t li, int64_t lj) {
  return p.GlobalRow(li) * p.cols + p.GlobalCol(lj);
}

// `p`'s local matrix of `tensor`, filled from the global formula.
template <typename T>
std::vector<T> Filled(const CyclicPart& p, uint64_t seed, const std::string& tensor) {
  std::vector<T> data(static_cast<size_t>(p.LocalElements()), T(0));
  for (int64_t lj = 0; lj < p.local_cols; ++lj) {
    for (int64_t li = 0; li < p.local_rows; ++li) {
      data[static_cast<size_t>(li + lj * p.lld())] =
          static_cast<T>(ElementValue(seed, tensor, TensorIndex(p, li, lj)));
    }
  }
  return data;
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
                   int reps, int warmup, uint64_t seed, MPI_Comm comm, const LibraryKernel& kernel,
                   RepetitionGate* gate) {
  LibraryGemmRun out;
  absl::StatusOr<std::unique_ptr<LibraryGemmCall>> call =
      LibraryGemmCall::Create(f, sizeof(T), g, comm);
  if (!call.ok()) {
    out.error = std::string(call.status().message());
    return out;
  }
  const CyclicPart& cp = (*call)->c();
  std::vector<T> a = Filled<T>((*call)->a(), seed, f.a);
  std::vector<T> b = Filled<T>((*call)->b(), seed, f.b);
  std::vector<T> c(static_cast<size_t>(cp.LocalElements()), T(0));
  const bool one_node = OnOneNode(comm);  // a repetition from the first start to the last end
  for (int r = 0;; ++r) {
    const Repetition rep = NextRepetition(gate, r, warmup, reps);
    if (rep == Repetition::kStop) break;
    if (f.accumulate) c = Filled<T>(cp, seed, f.c);
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (kernel) {
      kernel(c.data(), a.data(), b.data(), comm);
    } else {
      (*call)->Run(c.data(), a.data(), b.data());
    }
    const double slowest = StepSeconds(t0, MPI_Wtime(), one_node, comm);
    if (gate != nullptr) gate->Timed(slowest);
    if (rep == Repetition::kTimed) out.repetitions.push_back(slowest);
  }
  out.seconds = out.repetitions.empty() ? 0 : base::Median(out.repetitions);
  // The oracle: this rank's elements of C, then that every element is held.
  HeldOutput held;
  const int64_t local_rows = std::max<int64_t>(1, cp.local_rows);
  held.slots = cp.local_rows * cp.local_cols;
  held.global = [&cp, local_rows](int64_t i) {
    return TensorIndex(cp, i % local_rows, i / local_rows);
  };
  held.value = [&cp, &c, local_rows](int64_t i) {
    return static_cast<double>(
        c[static_cast<size_t>(i % local_rows + (i / local_rows) * cp.lld())]);
  };
  // The bound of runtime/oracle.h for a run in T (PSGEMM's and PDGEMM's sums in any order).
  const Precision precision = PrecisionOf(static_cast<int>(sizeof(T)));
  out.error = FirstError(CheckHeldValues(problem, seed, held, precision,
                                         absl::StrCat("grid row ", cp.row, ", column ", cp.col)),
                         comm);
  if (out.error.empty()) {
    std::unique_ptr<Comm> checking = NewMpiComm(comm, {g.prow, g.pcol});
    out.error = CheckCoverage(problem, seed, held, precision, *checking);
  }
  return out;
}

}  // namespace

LibraryGemmRun RunLibraryGemm(const ProblemSpec& problem, const GemmForm& form, int dtype_bytes,
                              const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                              MPI_Comm comm, const LibraryKernel& kernel, RepetitionGate* gate) {
  return dtype_bytes == 8
             ? Run<double>(problem, form, config, reps, warmup, seed, comm, kernel, gate)
             : Run<float>(problem, form, config, reps, warmup, seed, comm, kernel, gate);
}

}  // namespace meshtune::runtime
