// The in-process mesh: a Comm for each of P virtual ranks that run as threads of one
// process (the simulator's transport). Collectives meet at a rendezvous per group and
// call; point-to-point messages are copied through per-pair mailboxes. Where MPI would
// misbehave silently or hang — members of a collective disagreeing on its root or sizes,
// a message of the wrong size, a rank waiting for a message nobody sends — the world
// records an error (SimWorld::error) and the run stops instead of hanging: every waiting
// call then throws SimAborted. Thread-safe: each rank's thread uses its own Comm.
#ifndef MESHTUNE_RUNTIME_SIM_COMM_H_
#define MESHTUNE_RUNTIME_SIM_COMM_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/comm.h"

namespace meshtune::runtime {

// Thrown by a simulated rank's Comm call once the world has stopped (an error or a wait
// longer than the world's timeout); the rank's thread unwinds and ends.
struct SimAborted {};

class SimWorld {
 public:
  // A world of the mesh `axis_sizes`; a call that waits longer than `timeout_s` for its
  // peers stops the world with a deadlock error.
  explicit SimWorld(std::vector<int64_t> axis_sizes, double timeout_s = 60);

  // The Comm of `rank` (0 <= rank < ranks); each rank's thread uses its own.
  std::unique_ptr<Comm> CommFor(int rank);
  int ranks() const;
  // The first error recorded ("" when none).
  std::string error() const;
  // Records `message` as the error (the first one stays) and stops the world.
  void Fail(const std::string& message);

 private:
  friend class SimComm;
  struct Rendezvous {
    int expected = 0, arrived = 0, left = 0;
    std::vector<const void*> data;  // per member (group index)
    std::vector<int64_t> counts;    // per member
    std::vector<int> roots;         // per member: the root's group index (or -1)
  };
  // Blocks on cv_ until `ready` holds; throws SimAborted when the world stops first.
  template <typename F>
  void WaitLocked(std::unique_lock<std::mutex>& lock, F ready);

  std::vector<int64_t> sizes_;
  std::chrono::duration<double> timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::string error_;
  std::map<std::pair<int64_t, int64_t>, Rendezvous> rendezvous_;  // (group key, call number)
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> mail_;  // (from, to, tag)
};

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_SIM_COMM_H_
