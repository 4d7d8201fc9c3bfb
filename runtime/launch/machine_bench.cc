#include "runtime/launch/machine_bench.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "base/median.h"

namespace meshtune::runtime {

namespace {

// The communicator of the measurement in progress (MeasureMachine holds the mutex while it
// runs, so there is one at a time in a process).
MPI_Comm g_comm = MPI_COMM_NULL;
MPI_Comm Comm() { return g_comm; }

using base::Median;

// A barrier whose waiting ranks sleep instead of spinning, so that ranks with nothing to
// do leave the cores to the ranks being measured (the machine may be oversubscribed).
void SleepyBarrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  int done = 0;
  for (MPI_Test(&request, &done, MPI_STATUS_IGNORE); !done;
       MPI_Test(&request, &done, MPI_STATUS_IGNORE)) {
    usleep(100);
  }
}

// Evicts the caches before a timed communication or memory pass: in a schedule these run
// between kernels that have swept the caches, and a message from cold caches moves at about
// half the rate of one repeated from warm ones (2 MiB MPI_Reduce here: 3.9 against 7.9
// GB/s). A node's first `cores` ranks write `node_bytes` between them (the others would
// only take cores from them), then every rank waits asleep for all, so that no rank is
// still writing, or runnable without a core, when the next barrier starts the timing.
class CacheFlush {
 public:
  CacheFlush(int64_t node_bytes, int ranks_on_node, int node_rank, int cores) {
    const int writers = std::max(1, std::min(ranks_on_node, cores));
    if (node_rank < writers && node_bytes > 0)
      buf_.resize(static_cast<size_t>(node_bytes / writers));
    MPI_Allreduce(&node_bytes, &any_, 1, MPI_INT64_T, MPI_MAX, Comm());
  }
  void operator()() {
    if (any_ == 0) return;
    if (!buf_.empty()) std::memset(buf_.data(), ++round_, buf_.size());
    SleepyBarrier(Comm());
  }

 private:
  std::vector<char> buf_;
  int64_t any_ = 0;  // the largest node_bytes of any rank: 0 when no rank flushes
  unsigned char round_ = 0;
};

// The size of cpu0's highest-level cache as sysfs reports it ("32768K"), 0 when it does
// not (sysconf's _SC_LEVEL3_CACHE_SIZE reads CPUID, which virtual machines misreport).
int64_t LastLevelCacheBytes() {
  int64_t bytes = 0;
  for (int level = 0, index = 0;; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    int l = 0;
    std::string size;
    if (!(level_file >> l) || !(size_file >> size)) return bytes;
    const int64_t unit = size.back() == 'K' ? 1024 : size.back() == 'M' ? 1 << 20 : 1;
    if (l >= level) {
      level = l;
      bytes = std::atoll(size.c_str()) * unit;
    }
  }
}

// The bytes a node writes before each timed repetition: none on a node with more ranks
// than cores, else `mib` MiB, by default (mib < 0) twice the last-level cache (64 MiB when
// the system does not say). Where ranks outnumber cores they take turns on the
// cores, and a schedule's transfers run beside other ranks' kernels rather than after a
// flush: 2x2 on 2 cores, cold-cache rates (0.6 to 1.3 GB/s) predicted 1024^3 schedules up
// to 2.2 times their measured time (median error 0.38 to 0.70 a run), warm ones with a
// median error of 0.13 to 0.19 (docs/benchmarks.md).
int64_t FlushBytes(int mib, int ranks_on_node, int cores) {
  if (ranks_on_node > cores) return 0;
  if (mib >= 0) return int64_t{mib} << 20;
  const int64_t last = LastLevelCacheBytes();
  return last > 0 ? 2 * last : int64_t{64} << 20;
}

// Per repetition, the maximum over ranks of `local` (on rank 0; empty elsewhere).
std::vector<double> MaxOverRanks(const std::vector<double>& local, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<double> out(rank == 0 ? local.size() : 0);
  MPI_Reduce(local.data(), out.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_MAX, 0,
             comm);
  return out;
}

std::vector<int64_t> MessageSizes(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b < max_bytes; b *= 2) sizes.push_back(b);
  sizes.push_back(max_bytes);
  return sizes;
}

int Warmups(int reps) { return std::max(2, reps / 5); }

// Median one-way time of a `bytes` message between ranks 0 and `peer` (on rank 0).
double PingPong(char* buf, int64_t bytes, int reps, int rank, int peer) {
  std::vector<double> round_trips;
  const int n = static_cast<int>(bytes);
  for (int i = 0; i < Warmups(reps) + reps; ++i) {
    if (rank == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(buf, n, MPI_BYTE, peer, 0, Comm());
      MPI_Recv(buf, n, MPI_BYTE, peer, 0, Comm(), MPI_STATUS_IGNORE);
      if (i >= Warmups(reps)) round_trips.push_back(MPI_Wtime() - t0);
    } else if (rank == peer) {
      MPI_Recv(buf, n, MPI_BYTE, 0, 0, Comm(), MPI_STATUS_IGNORE);
      MPI_Send(buf, n, MPI_BYTE, 0, 0, Comm());
    }
  }
  return round_trips.empty() ? 0 : Median(round_trips) / 2;
}

// Median over repetitions of the slowest rank's ring exchange of `bytes`, every rank at
// once (on rank 0).
double Shift(char* send, char* recv, int64_t bytes, int reps, int rank, int size,
             CacheFlush& cold) {
  const int n = static_cast<int>(bytes);
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  auto exchange = [&] {
    MPI_Sendrecv(send, n, MPI_BYTE, to, 1, recv, n, MPI_BYTE, from, 1, Comm(), MPI_STATUS_IGNORE);
  };
  for (int i = 0; i < Warmups(reps); ++i) exchange();
  std::vector<double> local;
  for (int i = 0; i < reps; ++i) {
    cold();
    MPI_Barrier(Comm());
    const double t0 = MPI_Wtime();
    exchange();
    local.push_back(MPI_Wtime() - t0);
  }
  const std::vector<double> slowest = MaxOverRanks(local, Comm());
  return rank == 0 ? Median(slowest) : 0;
}

// Median over repetitions of the slowest rank's MPI_Bcast of `bytes` from rank 0 (on rank 0).
double Broadcast(char* buf, int64_t bytes, int reps, int rank, CacheFlush& cold) {
  const int n = static_cast<int>(bytes);
  for (int i = 0; i < Warmups(reps); ++i) MPI_Bcast(buf, n, MPI_BYTE, 0, Comm());
  std::vector<double> local;
  for (int i = 0; i < reps; ++i) {
    cold();
    MPI_Barrier(Comm());
    const double t0 = MPI_Wtime();
    MPI_Bcast(buf, n, MPI_BYTE, 0, Comm());
    local.push_back(MPI_Wtime() - t0);
  }
  const std::vector<double> slowest = MaxOverRanks(local, Comm());
  return rank == 0 ? Median(slowest) : 0;
}

// C = A B for the first `rows` rows of row-major n x n matrices.
void Gemm(int rows, int n, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}
void Gemm(int rows, int n, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, n, 1.0, a, n, b, n, 0.0, c, n);
}

// Row-major n x n operands A and B (values that keep the GEMM finite) and C.
template <typename T>
struct Operands {
  explicit Operands(int n) : n(n), a(Elems(n)), b(Elems(n)), c(Elems(n)) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<T>(1.0 / (1 + i % 7));
      b[i] = static_cast<T>(1.0 / (1 + i % 5));
    }
  }
  static size_t Elems(int n) { return static_cast<size_t>(n) * n; }
  void Multiply() { Gemm(n, n, a.data(), b.data(), c.data()); }
  // The same GEMM in row chunks with MPI progress between them, as the runtime runs a
  // kernel while a transfer is in flight (runtime/rank/rank_kernel.cc).
  void MultiplyWithProgress() {
    const int chunks = std::max(1, std::min(8, n / 64));
    for (int i = 0; i < chunks; ++i) {
      const int r0 = n * i / chunks, r1 = n * (i + 1) / chunks;
      Gemm(r1 - r0, n, a.data() + static_cast<size_t>(r0) * n, b.data(),
           c.data() + static_cast<size_t>(r0) * n);
      int flag = 0;
      if (i + 1 < chunks) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, Comm(), &flag, MPI_STATUS_IGNORE);
    }
  }
  int n;
  std::vector<T> a, b, c;
};

// Median over repetitions of the slowest rank's n x n x n GEMM, every rank at once (on rank 0).
template <typename T>
double TimeGemm(int n, int reps, int rank) {
  Operands<T> x(n);
  x.Multiply();  // warm-up: pages, caches, OpenBLAS buffers
  std::vector<double> local;
  for (int i = 0; i < reps; ++i) {
    SleepyBarrier(Comm());
    const double t0 = MPI_Wtime();
    x.Multiply();
    local.push_back(MPI_Wtime() - t0);
  }
  SleepyBarrier(Comm());  // no rank spins in the reduction while others compute
  const std::vector<double> slowest = MaxOverRanks(local, Comm());
  return rank == 0 ? Median(slowest) : 0;
}

// The overlap measurement's three medians (on rank 0).
struct OverlapTimes {
  double gemm = 0, shift = 0, both = 0;
};

// Every rank at once, alternating within each repetition: an n x n x n GEMM alone, a ring
// exchange of `bytes` alone, and the exchange in flight during the GEMM (file comment).
template <typename T>
OverlapTimes TimeOverlap(int n, int64_t bytes, int reps, int rank, int size, CacheFlush& cold) {
  Operands<T> x(n);
  std::vector<char> send(bytes, 1), recv(bytes, 0);
  const int count = static_cast<int>(bytes);
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  enum Mode { kGemm, kShift, kBoth };
  std::vector<double> local[3];
  for (int i = 0; i < Warmups(reps) + reps; ++i) {
    for (Mode mode : {kGemm, kShift, kBoth}) {
      MPI_Request requests[2];
      cold();
      MPI_Barrier(Comm());
      const double t0 = MPI_Wtime();
      if (mode != kGemm) {
        MPI_Irecv(recv.data(), count, MPI_BYTE, from, 2, Comm(), &requests[0]);
        MPI_Isend(send.data(), count, MPI_BYTE, to, 2, Comm(), &requests[1]);
      }
      if (mode == kGemm) x.Multiply();
      if (mode == kBoth) x.MultiplyWithProgress();
      if (mode != kGemm) MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
      if (i >= Warmups(reps)) local[mode].push_back(MPI_Wtime() - t0);
    }
  }
  OverlapTimes t;
  double* out[3] = {&t.gemm, &t.shift, &t.both};
  for (int mode = 0; mode < 3; ++mode) {
    const std::vector<double> slowest = MaxOverRanks(local[mode], Comm());
    if (rank == 0) *out[mode] = Median(slowest);
  }
  return t;
}

// The overlap GEMM's size: near the one whose time is the exchange's, a multiple of 64 in
// [64, gemm_n] (rank 0 decides, every rank gets it).
int OverlapGemmSize(int gemm_n, double gemm_s, double shift_s) {
  int n = gemm_n;
  if (gemm_s > 0) {
    const double fit = gemm_n * std::cbrt(shift_s / gemm_s);
    n = std::clamp(64 * static_cast<int>(std::lround(fit / 64)), 64, std::max(64, gemm_n));
  }
  MPI_Bcast(&n, 1, MPI_INT, 0, Comm());
  return n;
}

// The MPI datatype of the calibration's element type.
MPI_Datatype ElementType(bool f64) { return f64 ? MPI_DOUBLE : MPI_FLOAT; }

// The group sizes the collectives are measured at: 2, 4, 8, ... below `size`, and `size`.
std::vector<int> GroupSizes(int size) {
  std::vector<int> out;
  for (int g = 2; g < size; g *= 2) out.push_back(g);
  out.push_back(size);
  return out;
}

// The elements of each group rank's piece of a collective's box of about `bytes` over `g`
// ranks: rounded down to whole elements of `elem` bytes, at least one.
int64_t PieceElements(int64_t bytes, int g, int elem) {
  return std::max<int64_t>(1, bytes / elem / g);
}

// Median over repetitions of the slowest rank's call of collective `kind` on a box of
// PieceElements(bytes, g, element size) elements per rank of `group` (g ranks;
// MPI_COMM_NULL on idle ranks, which time nothing); on rank 0.
double TimeCollective(const std::string& kind, int64_t bytes, int reps, bool f64, MPI_Comm group,
                      int g, CacheFlush& cold) {
  const int elem = f64 ? 8 : 4;
  const int piece = static_cast<int>(PieceElements(bytes, g, elem));
  const int count = piece * g;  // elements of the whole box
  std::vector<char> send(static_cast<size_t>(count) * elem, 0), recv(send.size(), 0);
  const MPI_Datatype type = ElementType(f64);
  // The nonblocking form ("ibcast", ...), started and waited for at once, as a prefetched
  // statement's collective runs when the kernels beside it leave MPI no progress.
  MPI_Request request = MPI_REQUEST_NULL;
  auto call = [&] {
    if (kind == "ibcast") MPI_Ibcast(send.data(), count, type, 0, group, &request);
    if (kind == "ireduce")
      MPI_Ireduce(send.data(), recv.data(), count, type, MPI_SUM, 0, group, &request);
    if (kind == "iallgather")
      MPI_Iallgather(send.data(), piece, type, recv.data(), piece, type, group, &request);
    if (kind == "ireduce_scatter")
      MPI_Ireduce_scatter_block(send.data(), recv.data(), piece, type, MPI_SUM, group, &request);
    if (kind == "iallreduce")
      MPI_Iallreduce(send.data(), recv.data(), count, type, MPI_SUM, group, &request);
    if (request != MPI_REQUEST_NULL) MPI_Wait(&request, MPI_STATUS_IGNORE);
    if (kind == "bcast") MPI_Bcast(send.data(), count, type, 0, group);
    if (kind == "reduce") MPI_Reduce(send.data(), recv.data(), count, type, MPI_SUM, 0, group);
    if (kind == "allgather")
      MPI_Allgather(send.data(), piece, type, recv.data(), piece, type, group);
    if (kind == "reduce_scatter")
      MPI_Reduce_scatter_block(send.data(), recv.data(), piece, type, MPI_SUM, group);
    if (kind == "allreduce") MPI_Allreduce(send.data(), recv.data(), count, type, MPI_SUM, group);
    if (kind == "alltoall") MPI_Alltoall(send.data(), piece, type, recv.data(), piece, type, group);
  };
  std::vector<double> local;
  for (int i = 0; i < Warmups(reps) + reps; ++i) {
    cold();
    MPI_Barrier(Comm());
    const double t0 = MPI_Wtime();
    if (group != MPI_COMM_NULL) call();
    if (i >= Warmups(reps)) local.push_back(group != MPI_COMM_NULL ? MPI_Wtime() - t0 : 0);
  }
  const std::vector<double> slowest = MaxOverRanks(local, Comm());
  return slowest.empty() ? 0 : Median(slowest);
}

// Seconds per call of an m x n x k GEMM (C += A B, row-major) run `calls` times.
template <typename T>
double TimeGemmCalls(int m, int n, int k, int calls, std::vector<T>& a, std::vector<T>& b,
                     std::vector<T>& c) {
  const double t0 = MPI_Wtime();
  for (int i = 0; i < calls; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(),
                  n, 1.0f, c.data(), n);
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a.data(), k, b.data(), n,
                  1.0, c.data(), n);
    }
  }
  return (MPI_Wtime() - t0) / calls;
}

// Per shape of the grid (m, n, k ascending, k fastest), the median of 5 runs of the slowest
// rank's seconds per call, the `active` ranks at once while the others sleep (on rank 0;
// empty elsewhere).
template <typename T>
std::vector<double> TimeGemmTiles(const std::vector<int>& grid, double min_seconds, bool active) {
  const size_t largest = static_cast<size_t>(grid.back());
  std::vector<T> a(largest * largest, T(0.5)), b(largest * largest, T(0.25)),
      c(largest * largest, T(0));
  std::vector<double> out;
  for (int m : grid) {
    for (int n : grid) {
      for (int k : grid) {
        // Calls per run: enough for min_seconds by a first call's time (same on every rank).
        // Idle ranks wait in sleepy barriers, never in a spinning collective, while the
        // active ones compute.
        double once = active ? TimeGemmCalls(m, n, k, 1, a, b, c) : 0;
        SleepyBarrier(Comm());
        MPI_Allreduce(MPI_IN_PLACE, &once, 1, MPI_DOUBLE, MPI_MAX, Comm());
        const int calls = static_cast<int>(
            std::clamp(std::ceil(min_seconds / std::max(once, 1e-9)), 1.0, 100000.0));
        std::vector<double> local;
        for (int run = 0; run < 5; ++run) {
          SleepyBarrier(Comm());
          local.push_back(active ? TimeGemmCalls(m, n, k, calls, a, b, c) : 0);
        }
        SleepyBarrier(Comm());
        const std::vector<double> slowest = MaxOverRanks(local, Comm());
        if (!slowest.empty()) out.push_back(Median(slowest));
      }
    }
  }
  return out;
}

// Median over repetitions of the slowest rank's memory pass on `bytes`: "copy" packs a box
// of half the columns of a row-major matrix into a dense buffer, "add" adds a buffer into
// another (on rank 0).
template <typename T>
double TimeMemoryPass(const std::string& kind, int64_t bytes, int reps, CacheFlush& cold) {
  const int64_t n = std::max<int64_t>(1, bytes / static_cast<int64_t>(sizeof(T)));
  const int64_t cols = 256, rows = std::max<int64_t>(1, n / cols);
  std::vector<T> from(static_cast<size_t>(2 * rows * cols), T(1)), to(static_cast<size_t>(n), T(0));
  // gather: `to` (n elements) read from the column-major matrix `from` of 1024 rows, row
  // by row in runs of 64 columns, as a redistribution packs block-cyclic rows.
  const int64_t lld = 1024, lcols = std::max<int64_t>(1, n / lld);
  auto pass = [&] {
    if (kind == "copy") {
      for (int64_t r = 0; r < rows; ++r)
        std::copy(from.data() + 2 * r * cols, from.data() + 2 * r * cols + cols,
                  to.data() + r * cols);
    } else if (kind == "gather") {
      T* out = to.data();
      for (int64_t r = 0; r < lld; ++r) {
        for (int64_t c0 = 0; c0 < lcols; c0 += 64) {
          for (int64_t c = c0; c < std::min(lcols, c0 + 64); ++c) *out++ = from[r + c * lld];
        }
      }
    } else {
      for (int64_t i = 0; i < n; ++i) to[i] += from[i];
    }
  };
  std::vector<double> local;
  for (int i = 0; i < Warmups(reps) + reps; ++i) {
    cold();
    SleepyBarrier(Comm());
    const double t0 = MPI_Wtime();
    pass();
    if (i >= Warmups(reps)) local.push_back(MPI_Wtime() - t0);
  }
  volatile T sink = to[static_cast<size_t>(n) / 2];
  (void)sink;
  SleepyBarrier(Comm());
  const std::vector<double> slowest = MaxOverRanks(local, Comm());
  return slowest.empty() ? 0 : Median(slowest);
}

// The samples of the collectives, GEMM tiles and memory passes (file comment), on rank 0.
// The tiles run on the `tile_ranks` (as many ranks of each node as it has cores, the rest
// idle): the rates of a rank with a core to itself (the cost model shares them out when
// ranks exceed cores).
void CalibrateTables(const MachineBenchSettings& f, int rank, int size, bool tile_ranks,
                     CacheFlush& cold, v1::HardwareProfile* profile) {
  const bool f64 = f.dtype == "f64";
  const int elem = f64 ? 8 : 4;
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b < f.max_bytes; b *= 4) sizes.push_back(b);
  sizes.push_back(f.max_bytes);
  for (int g : GroupSizes(size)) {
    MPI_Comm group;
    const int color = rank < size / g * g ? rank / g : MPI_UNDEFINED;
    MPI_Comm_split(Comm(), color, rank, &group);
    for (const char* kind :
         {"bcast", "reduce", "allgather", "reduce_scatter", "allreduce", "alltoall", "ibcast",
          "ireduce", "iallgather", "ireduce_scatter", "iallreduce"}) {
      for (int64_t bytes : sizes) {
        const double s = TimeCollective(kind, bytes, f.reps, f64, group, g, cold);
        if (rank != 0) continue;
        v1::CalibrationSample* sample = profile->add_samples();
        sample->set_kind(std::string("coll_") + kind);
        sample->set_group(g);
        sample->set_bytes(PieceElements(bytes, g, elem) * g * elem);
        sample->set_seconds(s);
      }
    }
    if (group != MPI_COMM_NULL) MPI_Comm_free(&group);
  }
  const double min_s = f.tile_ms * 1e-3;
  const std::vector<double> tiles = f64 ? TimeGemmTiles<double>(f.tile_grid, min_s, tile_ranks)
                                        : TimeGemmTiles<float>(f.tile_grid, min_s, tile_ranks);
  for (const char* kind : {"copy", "add", "gather"}) {
    for (int64_t bytes = 256 << 10; bytes <= (16 << 20); bytes *= 4) {
      const double s = f64 ? TimeMemoryPass<double>(kind, bytes, 10, cold)
                           : TimeMemoryPass<float>(kind, bytes, 10, cold);
      if (rank != 0) continue;
      v1::CalibrationSample* sample = profile->add_samples();
      sample->set_kind(kind);
      sample->set_bytes(bytes);
      sample->set_seconds(s);
    }
  }
  if (rank != 0) return;
  size_t i = 0;
  for (int m : f.tile_grid) {
    for (int n : f.tile_grid) {
      for (int k : f.tile_grid) {
        v1::CalibrationSample* sample = profile->add_samples();
        sample->set_kind("gemm_tile");
        sample->set_m(m);
        sample->set_n(n);
        sample->set_k(k);
        sample->set_bytes(elem * (int64_t{m} * k + int64_t{k} * n + int64_t{m} * n));
        sample->set_seconds(tiles[i++]);
      }
    }
  }
}

// The first line of MPI_Get_library_version, e.g. "Open MPI v4.1.4, package: ...".
std::string MpiLibrary() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, static_cast<size_t>(length));
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.pop_back();
  return text;
}

// The ranks of `comm` on this rank's machine: those that read the same kernel boot id
// (/proc/sys/kernel/random/boot_id, one per running kernel and not per network
// namespace), else the same host name. They share its cores and caches, whatever MPI
// counts as a node: the nodes of a test cluster of namespaces are one machine.
MPI_Comm MachineComm(MPI_Comm comm) {
  constexpr int kIdBytes = 64;
  char id[kIdBytes] = {};
  std::ifstream("/proc/sys/kernel/random/boot_id").getline(id, kIdBytes);
  if (id[0] == '\0') gethostname(id, kIdBytes - 1);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<char> all(static_cast<size_t>(size) * kIdBytes);
  MPI_Allgather(id, kIdBytes, MPI_CHAR, all.data(), kIdBytes, MPI_CHAR, comm);
  int color = rank;
  for (int r = 0; r < size; ++r) {
    if (std::memcmp(all.data() + static_cast<size_t>(r) * kIdBytes, id, kIdBytes) == 0) {
      color = r;
      break;
    }
  }
  MPI_Comm machine;
  MPI_Comm_split(comm, color, rank, &machine);
  return machine;
}

std::string HostName() {
  char buf[256] = {};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "";
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

v1::HardwareProfile Measure(const MachineBenchSettings& f, int rank, int size) {
  v1::HardwareProfile profile;
  auto add_sample = [&profile](const char* kind, int64_t bytes, double seconds) {
    v1::CalibrationSample* s = profile.add_samples();
    s->set_kind(kind);
    s->set_bytes(bytes);
    s->set_seconds(seconds);
  };
  // This rank's machine: its ranks share the cache flush; rank 0's tells how much the GEMMs
  // shared cores; this rank's place on it decides whether it times the GEMM tiles.
  MPI_Comm node = MachineComm(Comm());
  int ranks_per_node = 0, node_rank = 0;
  MPI_Comm_size(node, &ranks_per_node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const int64_t flush_bytes = FlushBytes(f.flush_mib, ranks_per_node, cores);
  CacheFlush cold(flush_bytes, ranks_per_node, node_rank, cores);
  std::vector<char> buf(f.max_bytes, 1), recv(f.max_bytes, 0);
  const std::vector<int64_t> sizes = MessageSizes(f.max_bytes);
  std::vector<double> pingpong, shift, bcast;
  for (int64_t bytes : sizes) {
    pingpong.push_back(PingPong(buf.data(), bytes, f.reps, rank, f.peer));
    SleepyBarrier(Comm());
  }
  if (f.link_only) {
    if (rank != 0) return profile;
    profile.set_ranks(size);
    profile.set_ranks_per_node(ranks_per_node);
    profile.set_host(HostName());
    profile.set_created(UtcNow());
    for (size_t i = 0; i < sizes.size(); ++i) add_sample("pingpong", sizes[i], pingpong[i]);
    return profile;
  }
  for (int64_t bytes : sizes)
    shift.push_back(Shift(buf.data(), recv.data(), bytes, f.reps, rank, size, cold));
  for (int64_t bytes : sizes) bcast.push_back(Broadcast(buf.data(), bytes, f.reps, rank, cold));
  const bool f64 = f.dtype == "f64";
  const double gemm_s = f64 ? TimeGemm<double>(f.gemm_n, f.gemm_reps, rank)
                            : TimeGemm<float>(f.gemm_n, f.gemm_reps, rank);
  const int overlap_n = OverlapGemmSize(f.gemm_n, gemm_s, shift.back());
  const int overlap_reps = 2 * f.gemm_reps;
  const OverlapTimes overlap =
      f64 ? TimeOverlap<double>(overlap_n, f.max_bytes, overlap_reps, rank, size, cold)
          : TimeOverlap<float>(overlap_n, f.max_bytes, overlap_reps, rank, size, cold);
  CalibrateTables(f, rank, size, node_rank < cores, cold, &profile);
  if (rank != 0) return profile;

  profile.set_ranks(size);
  profile.set_ranks_per_node(ranks_per_node);
  profile.set_cores(cores);
  profile.set_mpi_library(MpiLibrary());
  profile.set_blas_config(openblas_get_config());
  profile.set_gemm_n(f.gemm_n);
  profile.set_dtype(f.dtype);
  profile.set_host(HostName());
  profile.set_created(UtcNow());
  profile.set_cache_flush_bytes(flush_bytes);
  for (size_t i = 0; i < sizes.size(); ++i) add_sample("pingpong", sizes[i], pingpong[i]);
  for (size_t i = 0; i < sizes.size(); ++i) add_sample("shift", sizes[i], shift[i]);
  for (size_t i = 0; i < sizes.size(); ++i) add_sample("bcast", sizes[i], bcast[i]);
  const int64_t elem = f.dtype == "f64" ? 8 : 4;
  add_sample("gemm", 3 * elem * f.gemm_n * f.gemm_n, gemm_s);
  add_sample("overlap_gemm", 3 * elem * overlap_n * overlap_n, overlap.gemm);
  add_sample("overlap_shift", f.max_bytes, overlap.shift);
  add_sample("overlap_both", f.max_bytes, overlap.both);
  return profile;
}

}  // namespace

v1::HardwareProfile MeasureMachine(const MachineBenchSettings& settings, MPI_Comm comm) {
  static std::mutex* running = new std::mutex;
  std::lock_guard<std::mutex> lock(*running);
  MachineBenchSettings f = settings;
  std::sort(f.tile_grid.begin(), f.tile_grid.end());
  f.tile_grid.erase(std::unique(f.tile_grid.begin(), f.tile_grid.end()), f.tile_grid.end());
  g_comm = comm;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  v1::HardwareProfile profile = Measure(f, rank, size);
  g_comm = MPI_COMM_NULL;
  return profile;
}

}  // namespace meshtune::runtime
