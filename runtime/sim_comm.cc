#include "runtime/sim_comm.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace meshtune::runtime {

namespace {

template <typename T>
void Combine(T* acc, const T* in, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case ReduceOp::kSum:
        acc[i] += in[i];
        break;
      case ReduceOp::kMax:
        acc[i] = std::max(acc[i], in[i]);
        break;
      case ReduceOp::kMin:
        acc[i] = std::min(acc[i], in[i]);
        break;
    }
  }
}

// acc op= in, elementwise over `n` elements of `type`.
void CombineTyped(void* acc, const void* in, int64_t n, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kFloat:
      return Combine(static_cast<float*>(acc), static_cast<const float*>(in), n, op);
    case DataType::kDouble:
      return Combine(static_cast<double*>(acc), static_cast<const double*>(in), n, op);
    case DataType::kInt:
      return Combine(static_cast<int*>(acc), static_cast<const int*>(in), n, op);
    case DataType::kLongLong:
      return Combine(static_cast<long long*>(acc), static_cast<const long long*>(in), n, op);
    case DataType::kChar:
      return Combine(static_cast<char*>(acc), static_cast<const char*>(in), n, op);
  }
}

}  // namespace

SimWorld::SimWorld(std::vector<int64_t> axis_sizes, double timeout_s)
    : sizes_(std::move(axis_sizes)), timeout_(timeout_s) {}

int SimWorld::ranks() const {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return static_cast<int>(n);
}

std::string SimWorld::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void SimWorld::Fail(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty()) error_ = message;
  stopped_ = true;
  cv_.notify_all();
}

template <typename F>
void SimWorld::WaitLocked(std::unique_lock<std::mutex>& lock, F ready) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout_);
  while (!ready()) {
    if (stopped_) throw SimAborted{};
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !stopped_) {
      if (error_.empty()) {
        error_ = absl::StrCat("simulated ranks deadlocked: a rank waited more than ",
                              timeout_.count(), " s for its peers");
      }
      stopped_ = true;
      cv_.notify_all();
    }
  }
}

class SimComm : public Comm {
 public:
  SimComm(SimWorld* world, int rank)
      : Comm(world->sizes_), world_(world), rank_(rank), me_(CoordsOf(rank)) {}

  int rank() const override { return rank_; }

  void Bcast(void* data, int64_t count, DataType type, const std::vector<int>& axes,
             const Coords& root) override {
    const int r = GroupIndex(axes, root);
    Collective(axes, data, count, r, "Bcast", [&](SimWorld::Rendezvous& rv, int me) {
      if (me != r) std::memcpy(data, rv.data[r], Bytes(std::min(count, rv.counts[r]), type));
    });
  }

  void Allgatherv(const void* send, int64_t send_count, void* recv, const std::vector<int>& counts,
                  const std::vector<int>& displs, DataType type,
                  const std::vector<int>& axes) override {
    Collective(axes, send, send_count, -1, "Allgatherv", [&](SimWorld::Rendezvous& rv, int) {
      for (size_t i = 0; i < counts.size(); ++i) {
        if (rv.counts[i] != counts[i]) {
          Fail(absl::StrCat("Allgatherv along ", AxesText(axes), ": rank ", RankText(rank_),
                            " expects ", counts[i], " elements from group member ", i,
                            ", which sends ", rv.counts[i]));
        }
        // A member that holds nothing of the box (an empty block) sends nothing.
        const int64_t n = std::min<int64_t>(counts[i], rv.counts[i]);
        if (n > 0)
          std::memcpy(static_cast<char*>(recv) + Bytes(displs[i], type), rv.data[i],
                      Bytes(n, type));
      }
    });
  }

  void SendrecvReplace(void* data, int64_t count, DataType type, int dest, int source) override {
    Post(dest, 7, data, count, type);
    Take(source, 7, data, count, type);
  }

  void Exchange(const std::vector<Message>& sends, const Message& recv, DataType type) override {
    for (const Message& m : sends) Post(m.peer, 11, m.data, m.count, type);
    if (recv.data != nullptr) Take(recv.peer, 11, recv.data, recv.count, type);
  }

  void Alltoallv(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                 DataType type) override {
    for (const Message& m : sends) Post(m.peer, 12, m.data, m.count, type);
    for (const Message& m : recvs) Take(m.peer, 12, m.data, m.count, type);
  }

  void Allreduce(void* data, int64_t count, DataType type, ReduceOp op,
                 const std::vector<int>& axes) override {
    std::vector<char> acc;
    Collective(axes, data, count, -1, "Allreduce", [&](SimWorld::Rendezvous& rv, int) {
      acc.assign(static_cast<const char*>(rv.data[0]),
                 static_cast<const char*>(rv.data[0]) + Bytes(count, type));
      for (size_t i = 1; i < rv.data.size(); ++i)
        CombineTyped(acc.data(), rv.data[i], count, type, op);
    });
    std::memcpy(data, acc.data(), acc.size());
  }

  void ReduceSum(const void* send, void* recv, int64_t count, DataType type,
                 const std::vector<int>& axes, const Coords& root) override {
    const int r = GroupIndex(axes, root);
    Collective(axes, send, count, r, "Reduce", [&](SimWorld::Rendezvous& rv, int me) {
      if (me != r) return;
      std::memcpy(recv, rv.data[0], Bytes(count, type));
      for (size_t i = 1; i < rv.data.size(); ++i)
        CombineTyped(recv, rv.data[i], count, type, ReduceOp::kSum);
    });
  }

  void ReduceScatterSum(const void* send, void* recv, const std::vector<int>& counts, DataType type,
                        const std::vector<int>& axes) override {
    int64_t total = 0, at = 0;
    const int me = GroupIndex(axes, me_);
    for (size_t i = 0; i < counts.size(); ++i) {
      if (static_cast<int>(i) < me) at += counts[i];
      total += counts[i];
    }
    Collective(axes, send, total, -1, "ReduceScatter", [&](SimWorld::Rendezvous& rv, int) {
      const int64_t n = counts[me];
      if (n <= 0) return;  // this member receives nothing (it holds no part)
      std::memcpy(recv, static_cast<const char*>(rv.data[0]) + Bytes(at, type), Bytes(n, type));
      for (size_t i = 1; i < rv.data.size(); ++i) {
        CombineTyped(recv, static_cast<const char*>(rv.data[i]) + Bytes(at, type), n, type,
                     ReduceOp::kSum);
      }
    });
  }

  void Barrier() override {
    Collective(AllAxes(), nullptr, 0, -1, "Barrier", [](SimWorld::Rendezvous&, int) {});
  }

  double Now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  static int64_t Bytes(int64_t count, DataType type) { return count * DataTypeBytes(type); }

  std::string RankText(int rank) const {
    return absl::StrCat("(", absl::StrJoin(CoordsOf(rank), ", "), ")");
  }
  static std::string AxesText(const std::vector<int>& axes) {
    return absl::StrCat("[", absl::StrJoin(axes, ","), "]");
  }

  // Records an error while the world's lock is held.
  void Fail(const std::string& message) {
    if (world_->error_.empty()) world_->error_ = "simulated " + message;
    world_->stopped_ = true;
    world_->cv_.notify_all();
  }

  // The caller's next collective on its group along `axes`: waits for every member, calls
  // use(rendezvous, my group index) with every member's (data, count, root) while holding
  // the world's lock, then waits until every member is done before anyone returns (so a
  // member's buffer stays unchanged while the others read it).
  template <typename F>
  void Collective(const std::vector<int>& axes, const void* data, int64_t count, int root,
                  const char* what, F use) {
    Coords base = me_;
    int mask = 0;
    for (int a : axes) {
      base[a] = 0;
      mask |= 1 << a;
    }
    const int64_t key = static_cast<int64_t>(mask) * size() + RankOf(base);
    const int64_t call = calls_[key]++;
    const int me = GroupIndex(axes, me_);
    int n = 1;
    for (int a : axes) n *= static_cast<int>(axis_sizes()[a]);
    std::unique_lock<std::mutex> lock(world_->mu_);
    SimWorld::Rendezvous& rv = world_->rendezvous_[{key, call}];
    if (rv.expected == 0) {
      rv.expected = n;
      rv.data.assign(n, nullptr);
      rv.counts.assign(n, 0);
      rv.roots.assign(n, -1);
    }
    rv.data[me] = data;
    rv.counts[me] = count;
    rv.roots[me] = root;
    ++rv.arrived;
    world_->cv_.notify_all();
    world_->WaitLocked(lock, [&] { return rv.arrived == rv.expected; });
    for (int i = 0; i < n; ++i) {
      if (rv.roots[i] != root) {
        Fail(absl::StrCat(what, " along ", AxesText(axes), ": rank ", RankText(rank_),
                          " names group member ", root, " as the root but another member names ",
                          rv.roots[i]));
      }
      if (root >= 0 && i == root && rv.counts[i] != count) {
        Fail(absl::StrCat(what, " along ", AxesText(axes), ": rank ", RankText(rank_), " expects ",
                          count, " elements but the root sends ", rv.counts[i]));
      }
      if (root < 0 && std::string(what) != "Allgatherv" && rv.counts[i] != count) {
        Fail(absl::StrCat(what, " along ", AxesText(axes), ": rank ", RankText(rank_), " passes ",
                          count, " elements but another member passes ", rv.counts[i]));
      }
    }
    use(rv, me);
    ++rv.left;
    world_->cv_.notify_all();
    world_->WaitLocked(lock, [&] { return rv.left == rv.expected; });
    if (++rv.arrived == 2 * rv.expected) world_->rendezvous_.erase({key, call});
  }

  void Post(int to, int tag, const void* data, int64_t count, DataType type) {
    std::lock_guard<std::mutex> lock(world_->mu_);
    const char* p = static_cast<const char*>(data);
    world_->mail_[{rank_, to, tag}].emplace_back(p, p + Bytes(count, type));
    world_->cv_.notify_all();
  }

  void Take(int from, int tag, void* data, int64_t count, DataType type) {
    std::unique_lock<std::mutex> lock(world_->mu_);
    auto& box = world_->mail_[{from, rank_, tag}];
    world_->WaitLocked(lock, [&] { return !box.empty(); });
    const std::vector<char> m = std::move(box.front());
    box.pop_front();
    if (static_cast<int64_t>(m.size()) != Bytes(count, type)) {
      Fail(absl::StrCat("message from rank ", RankText(from), " to rank ", RankText(rank_), " has ",
                        m.size() / DataTypeBytes(type), " elements, not the ", count, " expected"));
    }
    std::memcpy(data, m.data(), std::min<int64_t>(m.size(), Bytes(count, type)));
  }

  SimWorld* world_;
  int rank_;
  Coords me_;
  std::map<int64_t, int64_t> calls_;  // collectives made per group key
};

std::unique_ptr<Comm> SimWorld::CommFor(int rank) { return std::make_unique<SimComm>(this, rank); }

}  // namespace meshtune::runtime
