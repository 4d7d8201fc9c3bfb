// Comm: the message passing one rank of a mesh needs, as an interface with two
// implementations — MPI (runtime/mpi_comm.h, a periodic Cartesian communicator with one
// sub-communicator per set of axes) and the in-process simulator (runtime/sim_comm.h, every
// rank a thread of one process). RankRuntime (rank.h) implements every communication
// pattern once, over this interface, so a simulated run moves the same boxes between the
// same ranks as an MPI run.
//
// Ranks are numbered row-major over the mesh (the last axis fastest), as MPI_Cart_create
// without reordering numbers them. A group "along axes" is the set of ranks that share the
// caller's coordinates on every other axis; its members are indexed row-major over `axes`
// (as MPI_Cart_sub orders them). Collectives must be called by every member of the group,
// in the same order. One Comm per rank; not thread-safe.
#ifndef MESHTUNE_RUNTIME_COMM_H_
#define MESHTUNE_RUNTIME_COMM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace meshtune::runtime {

using Coords = std::vector<int64_t>;

enum class DataType { kFloat, kDouble, kInt, kLongLong, kChar };
enum class ReduceOp { kSum, kMax, kMin };

// Bytes of one element of `type`.
int DataTypeBytes(DataType type);

// A message of point-to-point Exchange: `count` elements at `data` to or from rank `peer`.
struct Message {
  int peer = 0;
  void* data = nullptr;
  int64_t count = 0;
};

// A started non-blocking operation (Comm::Start*). Its buffers must stay as they are (sends
// unchanged, receives unread) until Wait returns. Destroying an op that was not waited for
// waits for it.
class CommOp {
 public:
  virtual ~CommOp() = default;
  virtual void Wait() = 0;
};

class Comm {
 public:
  explicit Comm(std::vector<int64_t> axis_sizes);
  virtual ~Comm() = default;

  const std::vector<int64_t>& axis_sizes() const { return sizes_; }
  int size() const;
  virtual int rank() const = 0;
  Coords CoordsOf(int rank) const;
  // The rank at `coords`, each coordinate taken modulo its axis size (the mesh is periodic).
  int RankOf(const Coords& coords) const;
  // The members of the caller's group along `axes`, by group index; and the index of the
  // member at `coords` (its coordinates along `axes`, row-major).
  std::vector<Coords> Group(const std::vector<int>& axes) const;
  int GroupIndex(const std::vector<int>& axes, const Coords& coords) const;

  // MPI_Bcast over the group along `axes` from the member at `root`.
  virtual void Bcast(void* data, int64_t count, DataType type, const std::vector<int>& axes,
                     const Coords& root) = 0;
  // MPI_Allgatherv over the group along `axes`: member i's `send` (counts[i] elements)
  // lands at recv + displs[i]. Every member passes the same counts and displacements.
  virtual void Allgatherv(const void* send, int64_t send_count, void* recv,
                          const std::vector<int>& counts, const std::vector<int>& displs,
                          DataType type, const std::vector<int>& axes) = 0;
  // MPI_Sendrecv_replace: sends `data` to rank `dest` and replaces it with what rank
  // `source` sends.
  virtual void SendrecvReplace(void* data, int64_t count, DataType type, int dest, int source) = 0;
  // Every message of `sends` goes out, and `recv` (when its data is not null) is filled from
  // its peer; returns when all are done (Isend/Irecv/Waitall).
  virtual void Exchange(const std::vector<Message>& sends, const Message& recv, DataType type) = 0;
  // Every message of `sends` goes out and every one of `recvs` is filled from its peer, at
  // most one message per peer each way; returns when all are done (an all-to-all among the
  // ranks that name each other: Isend/Irecv/Waitall).
  virtual void Alltoallv(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                         DataType type) = 0;
  // MPI_Allreduce in place over the group along `axes` (every axis: the whole mesh).
  virtual void Allreduce(void* data, int64_t count, DataType type, ReduceOp op,
                         const std::vector<int>& axes) = 0;
  // MPI_Reduce (sum) of `send` over the group along `axes` into `recv` on the member at `root`.
  virtual void ReduceSum(const void* send, void* recv, int64_t count, DataType type,
                         const std::vector<int>& axes, const Coords& root) = 0;
  // MPI_Reduce_scatter (sum) over the group along `axes`: member i receives in `recv` the
  // sum of every member's `send` elements [displ_i, displ_i + counts[i]), where displ_i is
  // the sum of counts[0..i). Every member passes the same counts.
  virtual void ReduceScatterSum(const void* send, void* recv, const std::vector<int>& counts,
                                DataType type, const std::vector<int>& axes) = 0;
  virtual void Barrier() = 0;

  // Non-blocking forms of the calls above (MPI_Ibcast, MPI_Iallgatherv, Isend/Irecv,
  // MPI_Iallreduce, MPI_Ireduce, MPI_Ireduce_scatter): each starts the operation and returns
  // it. These defaults run the blocking call at once and return a finished op — what the
  // simulator's ranks (threads that already run apart) need.
  virtual std::unique_ptr<CommOp> StartBcast(void* data, int64_t count, DataType type,
                                             const std::vector<int>& axes, const Coords& root);
  virtual std::unique_ptr<CommOp> StartAllgatherv(const void* send, int64_t send_count, void* recv,
                                                  const std::vector<int>& counts,
                                                  const std::vector<int>& displs, DataType type,
                                                  const std::vector<int>& axes);
  virtual std::unique_ptr<CommOp> StartExchange(const std::vector<Message>& sends,
                                                const Message& recv, DataType type);
  virtual std::unique_ptr<CommOp> StartAlltoallv(const std::vector<Message>& sends,
                                                 const std::vector<Message>& recvs, DataType type);
  virtual std::unique_ptr<CommOp> StartAllreduce(void* data, int64_t count, DataType type,
                                                 ReduceOp op, const std::vector<int>& axes);
  virtual std::unique_ptr<CommOp> StartReduceSum(const void* send, void* recv, int64_t count,
                                                 DataType type, const std::vector<int>& axes,
                                                 const Coords& root);
  virtual std::unique_ptr<CommOp> StartReduceScatterSum(const void* send, void* recv,
                                                        const std::vector<int>& counts,
                                                        DataType type,
                                                        const std::vector<int>& axes);
  // Lets started operations advance while the caller computes (MPI progresses only inside
  // MPI calls); does nothing by default.
  virtual void Progress() {}

  // Seconds from a fixed point (MPI_Wtime).
  virtual double Now() const = 0;
  // Whether Now() reads one clock on every rank (every rank on one node), so that readings
  // of two ranks compare.
  virtual bool SharedClock() const { return true; }

  // Every axis of the mesh, for collectives over all ranks.
  std::vector<int> AllAxes() const;

 private:
  std::vector<int64_t> sizes_;
};

// Collective over every rank of `comm`: the message of the lowest rank whose `mine` is not
// empty (at most 511 characters), on every rank; "" when every rank's is.
std::string FirstError(const std::string& mine, Comm& comm);

// The time a step every rank took lasted, from each rank's Now() at its `start` and `end`:
// from the first rank's start to the last rank's end when the clock is shared (a rank the
// scheduler let start late is counted from when the first one started: with more ranks than
// cores, the slowest rank's own span undercounts the step), else the slowest rank's own
// end - start (the clocks of two nodes do not compare). The same on every rank; collective
// over every rank of `comm`.
double StepSeconds(double start, double end, Comm& comm);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_COMM_H_
