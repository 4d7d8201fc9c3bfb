#include "runtime/library/library_run.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/median.h"
#include "runtime/fill.h"
#include "runtime/mpi_comm.h"
#include "runtime/program_values.h"

namespace meshtune::runtime {

absl::StatusOr<std::unique_ptr<LibraryChain>> LibraryChain::Create(
    const std::vector<GemmForm>& forms, int dtype_bytes, const LibraryGemmConfig& config,
    MPI_Comm comm) {
  std::unique_ptr<LibraryChain> chain(new LibraryChain());
  for (const GemmForm& form : forms) {
    absl::StatusOr<std::unique_ptr<LibraryGemmCall>> call =
        LibraryGemmCall::Create(form, dtype_bytes, config, comm);
    if (!call.ok()) return call.status();
    const CyclicPart* parts[3] = {&(*call)->c(), &(*call)->a(), &(*call)->b()};
    const std::string* names[3] = {&form.c, &form.a, &form.b};
    std::array<int, 3> operands{};
    for (int w = 0; w < 3; ++w) {
      int t = chain->IndexOf(*names[w]);
      if (t < 0) {
        t = static_cast<int>(chain->tensors_.size());
        chain->tensors_.push_back({*names[w], *parts[w]});
      }
      const CyclicPart& held = chain->tensors_[t].part;
      if (held.rows != parts[w]->rows || held.cols != parts[w]->cols) {
        return absl::InvalidArgumentError(absl::StrCat(
            "statement ", chain->calls_.size() + 1, " reads ", *names[w], " as a ", parts[w]->rows,
            "x", parts[w]->cols, " matrix, an earlier one as ", held.rows, "x", held.cols));
      }
      if (w == 0) {
        chain->tensors_[t].written = true;
        chain->tensors_[t].accumulated = form.accumulate;
      }
      operands[w] = t;
    }
    chain->operands_.push_back(operands);
    chain->calls_.push_back(*std::move(call));
  }
  return chain;
}

int LibraryChain::IndexOf(const std::string& name) const {
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

void LibraryChain::Run(const std::vector<void*>& locals, MPI_Comm comm,
                       const LibraryKernel& kernel) const {
  for (size_t s = 0; s < calls_.size(); ++s) {
    void* c = locals[operands_[s][0]];
    const void* a = locals[operands_[s][1]];
    const void* b = locals[operands_[s][2]];
    if (kernel) {
      kernel(c, a, b, comm);
    } else {
      calls_[s]->Run(c, a, b);
    }
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

// Checks every statement's output (this rank's elements, then that every element is held)
// against the serial reference of `statements`: "" or the first error, "statement 2: ..."
// when there are several.
template <typename T>
std::string CheckChain(const std::vector<ProblemSpec>& statements, const LibraryChain& chain,
                       const std::vector<std::vector<T>>& locals, uint64_t seed,
                       const LibraryGemmConfig& g, MPI_Comm comm) {
  // The bound of runtime/oracle.h for a run in T (PSGEMM's and PDGEMM's sums in any order).
  const Precision precision = PrecisionOf(static_cast<int>(sizeof(T)));
  ProgramValues values(statements, seed, precision);
  std::unique_ptr<Comm> checking = NewMpiComm(comm, {g.prow, g.pcol});
  for (size_t s = 0; s < statements.size(); ++s) {
    const int t = chain.Operand(s, 0);
    const CyclicPart& cp = chain.tensors()[t].part;
    const std::vector<T>& c = locals[t];
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
    const OperandValues operands = values.OperandsOf(static_cast<int>(s));
    std::string error =
        FirstError(CheckHeldValues(statements[s], seed, held, precision,
                                   absl::StrCat("grid row ", cp.row, ", column ", cp.col), operands,
                                   4'000'000, values.ElementCost(static_cast<int>(s))),
                   comm);
    if (error.empty())
      error = CheckCoverage(statements[s], seed, held, precision, *checking, operands);
    if (!error.empty()) {
      return statements.size() > 1 ? absl::StrCat("statement ", s + 1, ": ", error) : error;
    }
  }
  return "";
}

template <typename T>
LibraryGemmRun Run(const std::vector<ProblemSpec>& statements, const std::vector<GemmForm>& forms,
                   const LibraryGemmConfig& g, int reps, int warmup, uint64_t seed, MPI_Comm comm,
                   const LibraryKernel& kernel, RepetitionGate* gate) {
  LibraryGemmRun out;
  absl::StatusOr<std::unique_ptr<LibraryChain>> chain =
      LibraryChain::Create(forms, sizeof(T), g, comm);
  if (!chain.ok()) {
    out.error = std::string(chain.status().message());
    return out;
  }
  const std::vector<LibraryChainTensor>& tensors = (*chain)->tensors();
  std::vector<std::vector<T>> locals;
  std::vector<void*> pointers;
  for (const LibraryChainTensor& t : tensors) {
    locals.push_back(t.written ? std::vector<T>(static_cast<size_t>(t.part.LocalElements()), T(0))
                               : Filled<T>(t.part, seed, t.name));
    pointers.push_back(locals.back().data());
  }
  const bool one_node = OnOneNode(comm);  // a repetition from the first start to the last end
  for (int r = 0;; ++r) {
    const Repetition rep = NextRepetition(gate, r, warmup, reps);
    if (rep == Repetition::kStop) break;
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (tensors[t].accumulated) {
        std::vector<T> filled = Filled<T>(tensors[t].part, seed, tensors[t].name);
        std::copy(filled.begin(), filled.end(), locals[t].begin());
      }
    }
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    (*chain)->Run(pointers, comm, kernel);
    const double slowest = StepSeconds(t0, MPI_Wtime(), one_node, comm);
    if (gate != nullptr) gate->Timed(slowest);
    if (rep == Repetition::kTimed) out.repetitions.push_back(slowest);
  }
  out.seconds = out.repetitions.empty() ? 0 : base::Median(out.repetitions);
  out.error = CheckChain<T>(statements, **chain, locals, seed, g, comm);
  return out;
}

}  // namespace

LibraryGemmRun RunLibraryChain(const std::vector<ProblemSpec>& statements,
                               const std::vector<GemmForm>& forms, int dtype_bytes,
                               const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                               MPI_Comm comm, const LibraryKernel& kernel, RepetitionGate* gate) {
  return dtype_bytes == 8
             ? Run<double>(statements, forms, config, reps, warmup, seed, comm, kernel, gate)
             : Run<float>(statements, forms, config, reps, warmup, seed, comm, kernel, gate);
}

LibraryGemmRun RunLibraryGemm(const ProblemSpec& problem, const GemmForm& form, int dtype_bytes,
                              const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                              MPI_Comm comm, const LibraryKernel& kernel, RepetitionGate* gate) {
  return RunLibraryChain({problem}, {form}, dtype_bytes, config, reps, warmup, seed, comm, kernel,
                         gate);
}

}  // namespace meshtune::runtime
