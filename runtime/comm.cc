#include "runtime/comm.h"

#include <cstddef>
#include <cstring>
#include <utility>

namespace meshtune::runtime {

int DataTypeBytes(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kInt:
      return 4;
    case DataType::kDouble:
    case DataType::kLongLong:
      return 8;
    case DataType::kChar:
      return 1;
  }
  return 1;
}

Comm::Comm(std::vector<int64_t> axis_sizes) : sizes_(std::move(axis_sizes)) {}

int Comm::size() const {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return static_cast<int>(n);
}

Coords Comm::CoordsOf(int rank) const {
  Coords c(sizes_.size());
  for (int a = static_cast<int>(sizes_.size()) - 1; a >= 0; --a) {
    c[a] = rank % sizes_[a];
    rank = static_cast<int>(rank / sizes_[a]);
  }
  return c;
}

int Comm::RankOf(const Coords& coords) const {
  int64_t r = 0;
  for (size_t a = 0; a < sizes_.size(); ++a)
    r = r * sizes_[a] + ((coords[a] % sizes_[a]) + sizes_[a]) % sizes_[a];
  return static_cast<int>(r);
}

std::vector<Coords> Comm::Group(const std::vector<int>& axes) const {
  const Coords me = CoordsOf(rank());
  std::vector<Coords> out = {me};
  // Row-major over `axes`: the last listed axis fastest.
  for (int a : axes) {
    std::vector<Coords> next;
    for (const Coords& c : out) {
      for (int64_t v = 0; v < sizes_[a]; ++v) {
        next.push_back(c);
        next.back()[a] = v;
      }
    }
    out = std::move(next);
  }
  return out;
}

int Comm::GroupIndex(const std::vector<int>& axes, const Coords& coords) const {
  int64_t i = 0;
  for (int a : axes) i = i * sizes_[a] + coords[a];
  return static_cast<int>(i);
}

std::vector<int> Comm::AllAxes() const {
  std::vector<int> axes;
  for (size_t a = 0; a < sizes_.size(); ++a) axes.push_back(static_cast<int>(a));
  return axes;
}

double StepSeconds(double start, double end, Comm& comm) {
  double span[2] = {-start, end};  // the max of -start is -(the first start)
  if (!comm.SharedClock()) {
    span[0] = 0;
    span[1] = end - start;
  }
  comm.Allreduce(span, 2, DataType::kDouble, ReduceOp::kMax, comm.AllAxes());
  return span[0] + span[1];
}

std::string FirstError(const std::string& mine, Comm& comm) {
  int first = mine.empty() ? comm.size() : comm.rank();
  comm.Allreduce(&first, 1, DataType::kInt, ReduceOp::kMin, comm.AllAxes());
  if (first == comm.size()) return "";
  std::vector<char> text(512, 0);
  if (comm.rank() == first) std::strncpy(text.data(), mine.c_str(), text.size() - 1);
  comm.Bcast(text.data(), static_cast<int64_t>(text.size()), DataType::kChar, comm.AllAxes(),
             comm.CoordsOf(first));
  return std::string(text.data());
}

}  // namespace meshtune::runtime

namespace meshtune::runtime {

namespace {

// An operation that finished when it started.
class DoneOp : public CommOp {
 public:
  void Wait() override {}
};

}  // namespace

std::unique_ptr<CommOp> Comm::StartBcast(void* data, int64_t count, DataType type,
                                         const std::vector<int>& axes, const Coords& root) {
  Bcast(data, count, type, axes, root);
  return std::make_unique<DoneOp>();
}

std::unique_ptr<CommOp> Comm::StartAllgatherv(const void* send, int64_t send_count, void* recv,
                                              const std::vector<int>& counts,
                                              const std::vector<int>& displs, DataType type,
                                              const std::vector<int>& axes) {
  Allgatherv(send, send_count, recv, counts, displs, type, axes);
  return std::make_unique<DoneOp>();
}

std::unique_ptr<CommOp> Comm::StartExchange(const std::vector<Message>& sends, const Message& recv,
                                            DataType type) {
  Exchange(sends, recv, type);
  return std::make_unique<DoneOp>();
}

std::unique_ptr<CommOp> Comm::StartAlltoallv(const std::vector<Message>& sends,
                                             const std::vector<Message>& recvs, DataType type) {
  Alltoallv(sends, recvs, type);
  return std::make_unique<DoneOp>();
}

std::unique_ptr<CommOp> Comm::StartAllreduce(void* data, int64_t count, DataType type, ReduceOp op,
                                             const std::vector<int>& axes) {
  Allreduce(data, count, type, op, axes);
  return std::make_unique<DoneOp>();
}

std::unique_ptr<CommOp> Comm::StartReduceSum(const void* send, void* recv, int64_t count,
                                             DataType type, const std::vector<int>& axes,
                                             const Coords& root) {
  ReduceSum(send, recv, count, type, axes, root);
  return std::make_unique<DoneOp>();
}

std::unique_ptr<CommOp> Comm::StartReduceScatterSum(const void* send, void* recv,
                                                    const std::vector<int>& counts, DataType type,
                                                    const std::vector<int>& axes) {
  ReduceScatterSum(send, recv, counts, type, axes);
  return std::make_unique<DoneOp>();
}

}  // namespace meshtune::runtime
