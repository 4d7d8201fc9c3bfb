// An application outside meshtune calling generated callable kernels
// (tests/kernel_sampler.cc samples them from whole spaces): everything it checks with is
// its own. It reads each kernel's statement and extents as text with its own parser, fills
// every shard (an array at KERNEL_storage's extents, NaN wherever the rank holds no element)
// where KERNEL_shard says it lies from its own formula of the global indices,
// calls the kernel on the first `ranks` ranks, checks every output element a rank holds
// (KERNEL_holds) against its own reference loops, and checks from KERNEL_shard and
// KERNEL_holds alone that every output element is held by some rank. Nothing of
// meshtune's runtime, IR or oracle is used. Rank 0 prints a line a kernel,
//   "KERNEL (EXPR on MESH): verified" or "KERNEL (...): FAILED <why>"
// and then "kernels: N verified of M". Exit status 0 when every kernel verified.
#include <mpi.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/sampled_kernels.h"

namespace {

struct Access {
  std::string tensor;
  std::vector<std::string> indices;
};

struct Statement {
  Access output;
  std::vector<Access> operands;
  bool accumulate = false, sum = false;
  std::map<std::string, int64_t> extents;
};

// "A[m,k]" at `at` (spaces skipped); advances `at`.
Access ParseAccess(const std::string& s, size_t* at) {
  Access a;
  size_t& i = *at;
  while (i < s.size() && s[i] == ' ') ++i;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'))
    a.tensor += s[i++];
  ++i;  // '['
  std::string index;
  for (; i < s.size() && s[i] != ']'; ++i) {
    if (s[i] == ',') {
      a.indices.push_back(index);
      index.clear();
    } else if (s[i] != ' ') {
      index += s[i];
    }
  }
  if (!index.empty()) a.indices.push_back(index);
  ++i;  // ']'
  return a;
}

// "C[m,n] += A[m,k] * B[k,n]" and "m=12,n=8,k=12".
Statement Parse(const std::string& expr, const std::string& extents) {
  Statement st;
  size_t at = 0;
  st.output = ParseAccess(expr, &at);
  while (at < expr.size() && expr[at] == ' ') ++at;
  st.accumulate = expr[at] == '+';
  at = expr.find('=', at) + 1;
  while (at < expr.size()) {
    st.operands.push_back(ParseAccess(expr, &at));
    while (at < expr.size() && expr[at] == ' ') ++at;
    if (at < expr.size()) st.sum = expr[at++] == '+';
  }
  size_t i = 0;
  while (i < extents.size()) {
    const size_t eq = extents.find('=', i), comma = extents.find(',', i);
    const size_t end = comma == std::string::npos ? extents.size() : comma;
    st.extents[extents.substr(i, eq - i)] = std::stoll(extents.substr(eq + 1, end - eq - 1));
    i = end + 1;
  }
  return st;
}

// The harness's own data: exact in f32 (quarters), products of three exact in f64.
double Value(const std::string& tensor, const std::vector<int64_t>& g) {
  int64_t h = static_cast<unsigned char>(tensor[0]) * 5;
  for (size_t d = 0; d < g.size(); ++d) h = h * 31 + g[d] * 7 + static_cast<int64_t>(d);
  return static_cast<double>(((h % 13) + 13) % 13 - 6) / 4.0;
}

const Access* Find(const Statement& st, const std::string& tensor) {
  if (st.output.tensor == tensor) return &st.output;
  for (const Access& a : st.operands) {
    if (a.tensor == tensor) return &a;
  }
  return nullptr;
}

// The output element at `g`, from the statement alone.
double Reference(const Statement& st, const std::vector<int64_t>& g) {
  std::map<std::string, int64_t> at;
  for (size_t d = 0; d < g.size(); ++d) at[st.output.indices[d]] = g[d];
  std::vector<std::string> reduction;
  for (const auto& [index, extent] : st.extents) {
    if (!at.count(index)) reduction.push_back(index);
  }
  double total = st.accumulate ? Value(st.output.tensor, g) : 0;
  std::vector<int64_t> r(reduction.size(), 0);
  while (true) {
    for (size_t i = 0; i < r.size(); ++i) at[reduction[i]] = r[i];
    double term = st.sum ? 0 : 1;
    for (const Access& a : st.operands) {
      std::vector<int64_t> e;
      for (const std::string& index : a.indices) e.push_back(at[index]);
      term = st.sum ? term + Value(a.tensor, e) : term * Value(a.tensor, e);
    }
    total += term;
    size_t i = 0;
    while (i < r.size() && ++r[i] == st.extents.at(reduction[i])) r[i++] = 0;
    if (i == r.size()) break;
  }
  return total;
}

// Global index of element `i` (row-major) of a box at `start` of `ext`.
std::vector<int64_t> Global(int64_t i, const std::vector<int64_t>& start,
                            const std::vector<int64_t>& ext) {
  std::vector<int64_t> g(ext.size());
  for (size_t d = ext.size(); d-- > 0;) {
    g[d] = start[d] + i % ext[d];
    i /= ext[d];
  }
  return g;
}

// Where global element `g` of a shard at `start` lies in its array of `strides`.
size_t At(const std::vector<int64_t>& g, const std::vector<int64_t>& start,
          const std::vector<int64_t>& strides) {
  int64_t at = 0;
  for (size_t d = 0; d < g.size(); ++d) at += (g[d] - start[d]) * strides[d];
  return static_cast<size_t>(at);
}

// Runs kernel `k` on the first k.ranks ranks of `world`; "" or what went wrong on this rank.
std::string RunKernel(const SampledKernel& k, const Statement& st, MPI_Comm world, int rank) {
  MPI_Comm active = MPI_COMM_NULL;
  MPI_Comm_split(world, rank < k.ranks ? 0 : MPI_UNDEFINED, rank, &active);
  if (active == MPI_COMM_NULL) return "";
  std::vector<std::vector<float>> data(k.tensors.size());
  std::vector<std::vector<int64_t>> starts(k.tensors.size()), exts(k.tensors.size()),
      strides(k.tensors.size());
  std::vector<void*> shards;
  std::string error;
  for (size_t t = 0; t < k.tensors.size(); ++t) {
    const Access* a = Find(st, k.tensors[t]);
    int64_t start[8], ext[8], storage[8];
    const int dims = k.shard(k.tensors[t].c_str(), rank, start, ext);
    if (a == nullptr || dims != static_cast<int>(a->indices.size()) ||
        k.storage(k.tensors[t].c_str(), storage) != dims) {
      error = "the shard of " + k.tensors[t] + " does not match the statement";
      break;
    }
    starts[t].assign(start, start + dims);
    exts[t].assign(ext, ext + dims);
    // The array at the storage's extents, NaN wherever the rank holds no element (the
    // padding of a short block, which the kernel must never read as data), and the
    // held elements at the storage's row-major strides.
    strides[t].assign(dims, 1);
    int64_t size = 1;
    for (int d = dims - 1; d >= 0; --d) {
      strides[t][d] = size;
      size *= storage[d];
      if (ext[d] > storage[d]) error = "the shard of " + k.tensors[t] + " exceeds its storage";
    }
    data[t].assign(static_cast<size_t>(std::max<int64_t>(size, 1)), NAN);
    const bool garbage = k.tensors[t] == st.output.tensor && !st.accumulate;
    int64_t n = 1;
    for (int d = 0; d < dims; ++d) n *= ext[d];
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<int64_t> g = Global(i, starts[t], exts[t]);
      data[t][At(g, starts[t], strides[t])] =
          garbage ? NAN : static_cast<float>(Value(k.tensors[t], g));
    }
    shards.push_back(data[t].data());
  }
  if (error.empty()) {
    const int status = k.call(shards.data(), active);
    if (status != 0) error = "the kernel returned " + std::to_string(status);
  }
  for (size_t t = 0; t < k.tensors.size() && error.empty(); ++t) {
    if (k.tensors[t] != st.output.tensor || k.holds(k.tensors[t].c_str(), rank) != 1) continue;
    int64_t n = 1;
    for (int64_t e : exts[t]) n *= e;
    for (int64_t i = 0; i < n && error.empty(); ++i) {
      const std::vector<int64_t> g = Global(i, starts[t], exts[t]);
      const double want = Reference(st, g), got = data[t][At(g, starts[t], strides[t])];
      if (!(std::fabs(got - want) <= 1e-4 * (1 + std::fabs(want)))) {
        char text[160];
        std::snprintf(text, sizeof(text), "rank %d: %s[%lld...] = %g but the reference is %g", rank,
                      st.output.tensor.c_str(), static_cast<long long>(g[0]), got, want);
        error = text;
      }
    }
  }
  MPI_Comm_free(&active);
  return error;
}

// From the kernel's metadata alone: every output element on some rank that holds it.
std::string Coverage(const SampledKernel& k, const Statement& st) {
  std::vector<int64_t> shape;
  int64_t total = 1;
  for (const std::string& index : st.output.indices) {
    shape.push_back(st.extents.at(index));
    total *= shape.back();
  }
  std::vector<char> held(static_cast<size_t>(total), 0);
  for (int r = 0; r < k.ranks; ++r) {
    if (k.holds(st.output.tensor.c_str(), r) != 1) continue;
    int64_t start[8], ext[8];
    const int dims = k.shard(st.output.tensor.c_str(), r, start, ext);
    int64_t n = 1;
    for (int d = 0; d < dims; ++d) n *= ext[d];
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<int64_t> g = Global(i, std::vector<int64_t>(start, start + dims),
                                            std::vector<int64_t>(ext, ext + dims));
      int64_t linear = 0;
      for (size_t d = 0; d < g.size(); ++d) linear = linear * shape[d] + g[d];
      if (linear >= 0 && linear < total) held[linear] = 1;
    }
  }
  for (int64_t i = 0; i < total; ++i) {
    if (!held[i]) return "element " + std::to_string(i) + " of the output is held by no rank";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int verified = 0;
  for (const SampledKernel& k : SampledKernels()) {
    const Statement st = Parse(k.expr, k.extents);
    std::string error =
        k.ranks > size ? "the job has too few ranks" : RunKernel(k, st, MPI_COMM_WORLD, rank);
    int bad = error.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    // The lowest failing rank's message.
    int first = bad ? rank : size;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char text[256] = {0};
    if (rank == first) std::snprintf(text, sizeof(text), "%s", error.c_str());
    if (any) MPI_Bcast(text, sizeof(text), MPI_CHAR, first, MPI_COMM_WORLD);
    if (rank == 0) {
      std::string why = any ? text : Coverage(k, st);
      if (why.empty()) ++verified;
      std::printf("%s (%s on %s): %s\n", k.name.c_str(), k.expr.c_str(), k.mesh.c_str(),
                  why.empty() ? "verified" : ("FAILED " + why).c_str());
    }
  }
  MPI_Bcast(&verified, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const int all = static_cast<int>(SampledKernels().size());
  if (rank == 0) std::printf("kernels: %d verified of %d\n", verified, all);
  MPI_Finalize();
  return verified == all ? 0 : 1;
}
