#include "runtime/library/library_gemm.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
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

}  // namespace meshtune::runtime
