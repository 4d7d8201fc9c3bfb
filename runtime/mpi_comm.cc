#include "runtime/mpi_comm.h"

#include <map>
#include <utility>

namespace meshtune::runtime {

bool OnOneNode(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int here = 0, all = 0;
  MPI_Comm_size(node, &here);
  MPI_Comm_size(comm, &all);
  MPI_Comm_free(&node);
  int one = here == all ? 1 : 0, every = 0;
  MPI_Allreduce(&one, &every, 1, MPI_INT, MPI_MIN, comm);
  return every == 1;
}

double StepSeconds(double start, double end, bool one_node, MPI_Comm comm) {
  double span[2] = {-start, end}, out[2] = {0, 0};
  if (!one_node) {
    span[0] = 0;
    span[1] = end - start;
  }
  MPI_Allreduce(span, out, 2, MPI_DOUBLE, MPI_MAX, comm);
  return out[0] + out[1];
}

namespace {

MPI_Datatype Type(DataType t) {
  switch (t) {
    case DataType::kFloat:
      return MPI_FLOAT;
    case DataType::kDouble:
      return MPI_DOUBLE;
    case DataType::kInt:
      return MPI_INT;
    case DataType::kLongLong:
      return MPI_LONG_LONG;
    case DataType::kChar:
      return MPI_CHAR;
  }
  return MPI_BYTE;
}

MPI_Op Op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

// A started MPI operation: its requests, and the count arrays MPI reads until completion.
class MpiOp : public CommOp {
 public:
  ~MpiOp() override { Wait(); }
  void Wait() override {
    if (!reqs.empty()) MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    reqs.clear();
  }
  std::vector<MPI_Request> reqs;
  std::vector<int> counts, displs;
};

class MpiComm : public Comm {
 public:
  MpiComm(MPI_Comm comm, const std::vector<int64_t>& sizes) : Comm(sizes) {
    std::vector<int> dims(sizes.begin(), sizes.end()), periods(dims.size(), 1);
    MPI_Cart_create(comm, static_cast<int>(dims.size()), dims.data(), periods.data(), 0, &cart_);
    MPI_Comm_rank(cart_, &rank_);
    shared_clock_ = OnOneNode(cart_);
  }
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // freed with MPI itself (a plan kept past MPI_Finalize)
    for (auto& [mask, c] : subs_) MPI_Comm_free(&c);
    MPI_Comm_free(&cart_);
  }

  int rank() const override { return rank_; }

  void Bcast(void* data, int64_t count, DataType type, const std::vector<int>& axes,
             const Coords& root) override {
    MPI_Bcast(data, static_cast<int>(count), Type(type), GroupIndex(axes, root), Sub(axes));
  }

  void Allgatherv(const void* send, int64_t send_count, void* recv, const std::vector<int>& counts,
                  const std::vector<int>& displs, DataType type,
                  const std::vector<int>& axes) override {
    MPI_Allgatherv(send, static_cast<int>(send_count), Type(type), recv, counts.data(),
                   displs.data(), Type(type), Sub(axes));
  }

  void SendrecvReplace(void* data, int64_t count, DataType type, int dest, int source) override {
    MPI_Sendrecv_replace(data, static_cast<int>(count), Type(type), dest, 7, source, 7, cart_,
                         MPI_STATUS_IGNORE);
  }

  void Exchange(const std::vector<Message>& sends, const Message& recv, DataType type) override {
    std::vector<MPI_Request> reqs = Post(sends, recv, type);
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  }

  void Alltoallv(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                 DataType type) override {
    std::vector<MPI_Request> reqs = Post(sends, recvs, type, 12);
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  }

  std::unique_ptr<CommOp> StartAlltoallv(const std::vector<Message>& sends,
                                         const std::vector<Message>& recvs,
                                         DataType type) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs = Post(sends, recvs, type, 12);
    return op;
  }

  void Allreduce(void* data, int64_t count, DataType type, ReduceOp op,
                 const std::vector<int>& axes) override {
    MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), Type(type), Op(op), Sub(axes));
  }

  void ReduceSum(const void* send, void* recv, int64_t count, DataType type,
                 const std::vector<int>& axes, const Coords& root) override {
    MPI_Reduce(send, recv, static_cast<int>(count), Type(type), MPI_SUM, GroupIndex(axes, root),
               Sub(axes));
  }

  void ReduceScatterSum(const void* send, void* recv, const std::vector<int>& counts, DataType type,
                        const std::vector<int>& axes) override {
    MPI_Reduce_scatter(send, recv, counts.data(), Type(type), MPI_SUM, Sub(axes));
  }

  void Barrier() override { MPI_Barrier(cart_); }

  std::unique_ptr<CommOp> StartBcast(void* data, int64_t count, DataType type,
                                     const std::vector<int>& axes, const Coords& root) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs.resize(1);
    MPI_Ibcast(data, static_cast<int>(count), Type(type), GroupIndex(axes, root), Sub(axes),
               &op->reqs[0]);
    return op;
  }

  std::unique_ptr<CommOp> StartAllgatherv(const void* send, int64_t send_count, void* recv,
                                          const std::vector<int>& counts,
                                          const std::vector<int>& displs, DataType type,
                                          const std::vector<int>& axes) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs.resize(1);
    op->counts = counts;
    op->displs = displs;
    MPI_Iallgatherv(send, static_cast<int>(send_count), Type(type), recv, op->counts.data(),
                    op->displs.data(), Type(type), Sub(axes), &op->reqs[0]);
    return op;
  }

  std::unique_ptr<CommOp> StartExchange(const std::vector<Message>& sends, const Message& recv,
                                        DataType type) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs = Post(sends, recv, type);
    return op;
  }

  std::unique_ptr<CommOp> StartAllreduce(void* data, int64_t count, DataType type, ReduceOp o,
                                         const std::vector<int>& axes) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs.resize(1);
    MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), Type(type), Op(o), Sub(axes),
                   &op->reqs[0]);
    return op;
  }

  std::unique_ptr<CommOp> StartReduceSum(const void* send, void* recv, int64_t count, DataType type,
                                         const std::vector<int>& axes,
                                         const Coords& root) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs.resize(1);
    MPI_Ireduce(send, recv, static_cast<int>(count), Type(type), MPI_SUM, GroupIndex(axes, root),
                Sub(axes), &op->reqs[0]);
    return op;
  }

  std::unique_ptr<CommOp> StartReduceScatterSum(const void* send, void* recv,
                                                const std::vector<int>& counts, DataType type,
                                                const std::vector<int>& axes) override {
    auto op = std::make_unique<MpiOp>();
    op->reqs.resize(1);
    op->counts = counts;
    MPI_Ireduce_scatter(send, recv, op->counts.data(), Type(type), MPI_SUM, Sub(axes),
                        &op->reqs[0]);
    return op;
  }

  // Open MPI moves started transfers only inside MPI calls; a probe drives its progress engine.
  void Progress() override {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, cart_, &flag, MPI_STATUS_IGNORE);
  }
  double Now() const override { return MPI_Wtime(); }
  bool SharedClock() const override { return shared_clock_; }

 private:
  // Starts every send of `sends` and the receive `recv` (when its data is not null).
  // `recvs` posted (Irecv), then `sends` (Isend), with tag `tag`: Exchange's (11) and
  // Alltoallv's (12).
  std::vector<MPI_Request> Post(const std::vector<Message>& sends,
                                const std::vector<Message>& recvs, DataType type, int tag) {
    std::vector<MPI_Request> reqs(sends.size() + recvs.size());
    for (size_t i = 0; i < recvs.size(); ++i) {
      MPI_Irecv(recvs[i].data, static_cast<int>(recvs[i].count), Type(type), recvs[i].peer, tag,
                cart_, &reqs[i]);
    }
    for (size_t i = 0; i < sends.size(); ++i) {
      MPI_Isend(sends[i].data, static_cast<int>(sends[i].count), Type(type), sends[i].peer, tag,
                cart_, &reqs[recvs.size() + i]);
    }
    return reqs;
  }

  // Exchange's messages: `sends` and `recv` when it has data.
  std::vector<MPI_Request> Post(const std::vector<Message>& sends, const Message& recv,
                                DataType type) {
    return Post(sends, recv.data != nullptr ? std::vector<Message>{recv} : std::vector<Message>{},
                type, 11);
  }

  MPI_Comm Sub(const std::vector<int>& axes) {
    int mask = 0;
    for (int a : axes) mask |= 1 << a;
    auto it = subs_.find(mask);
    if (it != subs_.end()) return it->second;
    std::vector<int> keep(axis_sizes().size(), 0);
    for (int a : axes) keep[a] = 1;
    MPI_Comm c;
    MPI_Cart_sub(cart_, keep.data(), &c);
    return subs_[mask] = c;
  }

  MPI_Comm cart_;
  int rank_ = 0;
  bool shared_clock_ = true;  // every rank on one node (OnOneNode)
  std::map<int, MPI_Comm> subs_;
};

}  // namespace

std::unique_ptr<Comm> NewMpiComm(MPI_Comm comm, const std::vector<int64_t>& axis_sizes) {
  return std::make_unique<MpiComm>(comm, axis_sizes);
}

std::unique_ptr<RankRuntimeBase> MakeRankRuntime(
    int dtype_bytes, MPI_Comm comm, const std::vector<int64_t>& axis_sizes,
    const std::vector<std::string>& axis_names, std::vector<TensorSpec> tensors,
    std::vector<BufferSpec> buffers, ProblemSpec problem, bool accumulate, uint64_t seed) {
  return MakeRankRuntime(dtype_bytes, NewMpiComm(comm, axis_sizes), axis_names, std::move(tensors),
                         std::move(buffers), std::move(problem), accumulate, seed);
}

std::unique_ptr<RankRuntimeBase> MakeBoundRankRuntime(int dtype_bytes, MPI_Comm comm,
                                                      const std::vector<int64_t>& axis_sizes,
                                                      const std::vector<std::string>& axis_names,
                                                      std::vector<TensorSpec> tensors,
                                                      std::vector<BufferSpec> buffers,
                                                      bool accumulate) {
  return MakeBoundRankRuntime(dtype_bytes, NewMpiComm(comm, axis_sizes), axis_names,
                              std::move(tensors), std::move(buffers), accumulate);
}

}  // namespace meshtune::runtime
